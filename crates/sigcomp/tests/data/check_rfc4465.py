#!/usr/bin/env python3
"""Structural checker for rfc4465.json (RFC 4465 SigComp torture-test vectors).

Stdlib only.  Usage:
    python3 check_rfc4465.py [rfc4465.json] [--rfc path/to/rfc4465.txt]

Checks:
  * schema: unique ids, endpoint values legal for RFC 3320, transport, step/expect fields,
    output_hex/cycles/nack consistency, RFC 4077 reason names, optional fields well formed;
  * every hex string is valid, even-length hex;
  * SigComp header of every message (RFC 3320 section 7): 11111 T len; returned feedback item;
    len = 1/2/3 -> 6/9/12-byte partial state id present; len = 0 -> code_len/destination present
    and code_len matches the uploaded bytecode that follows, destination != 0, bytecode fits the
    UDVM memory of the endpoint.  Header errors must agree with the expected NACK
    (MESSAGE_TOO_SHORT / INVALID_CODE_LOCATION) and vice versa;
  * tcp steps are un-framed with the RFC 3320 4.2.2 record marking; the number of completed
    non-empty messages must match the expectation;
  * header partial state ids must match a state announced in states_created of an earlier step;
  * with --rfc: message bytes are compared with the Appendix A hex dumps of the RFC text.
Exit status 0 when no error was found.
"""
import json
import os
import re
import sys

NACKS = {
    "STATE_NOT_FOUND": 1, "CYCLES_EXHAUSTED": 2, "USER_REQUESTED": 3, "SEGFAULT": 4,
    "TOO_MANY_STATE_REQUESTS": 5, "INVALID_STATE_ID_LENGTH": 6, "INVALID_STATE_PRIORITY": 7,
    "OUTPUT_OVERFLOW": 8, "STACK_UNDERFLOW": 9, "BAD_INPUT_BITORDER": 10, "DIV_BY_ZERO": 11,
    "SWITCH_VALUE_TOO_HIGH": 12, "TOO_MANY_BITS_REQUESTED": 13, "INVALID_OPERAND": 14,
    "HUFFMAN_NO_MATCH": 15, "MESSAGE_TOO_SHORT": 16, "INVALID_CODE_LOCATION": 17,
    "BYTECODES_TOO_LARGE": 18, "INVALID_OPCODE": 19, "INVALID_STATE_PROBE": 20, "ID_NOT_UNIQUE": 21,
    "MULTILOAD_OVERWRITTEN": 22, "STATE_TOO_SHORT": 23, "INTERNAL_ERROR": 24, "FRAMING_ERROR": 25,
}
SIZES = [2048, 4096, 8192, 16384, 32768, 65536, 131072]
HEX = re.compile(r"^(?:[0-9a-f]{2})*$")

errors = []
warnings = []


def err(where, msg):
    errors.append("%s: %s" % (where, msg))


def warn(where, msg):
    warnings.append("%s: %s" % (where, msg))


def hexbytes(where, v, allow_none=False):
    if v is None and allow_none:
        return None
    if not isinstance(v, str) or not HEX.match(v):
        err(where, "invalid hex %r" % (v,))
        return None
    return bytes.fromhex(v)


def parse_header(msg):
    """RFC 3320 section 7. Returns dict; 'error' is None or a NACK name."""
    h = {"error": None, "len": len(msg)}
    if len(msg) < 1 or msg[0] & 0xF8 != 0xF8:
        h["error"] = "MESSAGE_TOO_SHORT" if not msg else "NOT_SIGCOMP"
        return h
    t = (msg[0] >> 2) & 1
    ln = msg[0] & 3
    p = 1
    if t:
        if p >= len(msg):
            h["error"] = "MESSAGE_TOO_SHORT"
            return h
        flen = 1 + (msg[p] & 0x7F) if msg[p] & 0x80 else 1
        if p + flen > len(msg):
            h["error"] = "MESSAGE_TOO_SHORT"
            return h
        h["returned_feedback"] = msg[p:p + flen].hex()
        p += flen
    if ln:
        n = (0, 6, 9, 12)[ln]
        h["kind"] = "state"
        if p + n > len(msg):
            h["error"] = "MESSAGE_TOO_SHORT"
            return h
        h["psid"] = msg[p:p + n].hex()
        p += n
        h["header_len"] = p
        h["input"] = msg[p:]
        return h
    h["kind"] = "upload"
    if p + 2 > len(msg):
        h["error"] = "MESSAGE_TOO_SHORT"
        return h
    code_len = (msg[p] << 4) | (msg[p + 1] >> 4)
    dest = msg[p + 1] & 0x0F
    h["code_len"] = code_len
    h["dest_field"] = dest
    p += 2
    # RFC 4465 A.2.4 expects INVALID_CODE_LOCATION for a message that is also too short,
    # so the destination is checked first.
    if dest == 0:
        h["error"] = "INVALID_CODE_LOCATION"
        return h
    h["destination"] = (dest + 1) * 64
    if p + code_len > len(msg):
        h["error"] = "MESSAGE_TOO_SHORT"
        h["missing"] = p + code_len - len(msg)
        return h
    h["bytecode"] = msg[p:p + code_len]
    h["header_len"] = p + code_len
    h["input"] = msg[p + code_len:]
    return h


def deframe(stream):
    """RFC 3320 4.2.2 record marking -> (messages incl. empty ones, leftover, error)."""
    msgs, cur, i, n = [], bytearray(), 0, len(stream)
    while i < n:
        b = stream[i]
        if b != 0xFF:
            cur.append(b)
            i += 1
            continue
        if i + 1 >= n:
            return msgs, bytes(cur), "stream ends inside an escape"
        c = stream[i + 1]
        if c == 0xFF:
            msgs.append(bytes(cur))
            cur = bytearray()
            i += 2
        elif c >= 0x80:
            return msgs, bytes(cur), "FRAMING_ERROR (reserved 0xFF%02X)" % c
        else:
            cur.append(0xFF)
            cur += stream[i + 2:i + 2 + c]
            if i + 2 + c > n:
                return msgs, bytes(cur), "stream ends inside a quoted run"
            i += 2 + c
    return msgs, bytes(cur), None


def check_expect(where, e, transport, allow_messages=True):
    if not isinstance(e, dict):
        err(where, "expect must be an object")
        return []
    if "messages" in e:
        if transport != "tcp" or not allow_messages:
            err(where, "'messages' only allowed in tcp steps")
        ms = e["messages"]
        if not isinstance(ms, list) or len(ms) < 2:
            err(where, "'messages' must list >= 2 results")
            return []
        extra = set(e) - {"messages"}
        if extra:
            err(where, "fields beside 'messages': %s" % sorted(extra))
        out = []
        for k, m in enumerate(ms):
            out += check_expect("%s.messages[%d]" % (where, k), m, transport, False)
        return out
    for f in ("output_hex", "cycles", "nack"):
        if f not in e:
            err(where, "missing expect.%s" % f)
    nack = e.get("nack")
    out = e.get("output_hex")
    if nack is not None:
        if nack not in NACKS:
            err(where, "unknown NACK reason %r" % nack)
        if out is not None:
            err(where, "failing step must have output_hex null")
        if e.get("cycles") is not None:
            err(where, "failing step must have cycles null")
    else:
        if out is None:
            err(where, "output_hex null but no nack")
        else:
            hexbytes(where + ".output_hex", out)
    c = e.get("cycles")
    if c is not None and (not isinstance(c, int) or isinstance(c, bool) or c <= 0):
        err(where, "cycles must be a positive integer or null")
    if "nack_note" in e and not isinstance(e["nack_note"], str):
        err(where, "nack_note must be a string")
    for f in ("requested_feedback_hex", "returned_feedback_hex"):
        if f in e:
            b = hexbytes(where + "." + f, e[f])
            if b:
                want = 1 + (b[0] & 0x7F) if b[0] & 0x80 else 1
                if len(b) != want:
                    err(where, "%s is not a well-formed feedback item (%d bytes, header says %d)" % (f, len(b), want))
    if "returned_parameters" in e:
        rp = e["returned_parameters"]
        for k in rp.get("partial_state_ids_hex", []):
            b = hexbytes(where + ".returned_parameters", k)
            if b is not None and not 6 <= len(b) <= 20:
                err(where, "announced partial state id length %d not in 6..20" % len(b))
        if "encoded_hex" in rp:
            b = hexbytes(where + ".returned_parameters.encoded_hex", rp["encoded_hex"])
            if b and len(b) == 2:
                dec = (16 << (b[0] >> 6), [0] + SIZES)
                if dec[0] != rp.get("cpb") or dec[1][(b[0] >> 3) & 7] != rp.get("dms") or \
                        dec[1][b[0] & 7] != rp.get("sms") or b[1] != rp.get("sigcomp_version"):
                    err(where, "returned_parameters.encoded_hex does not match cpb/dms/sms/version")
    for s in e.get("states_created", []):
        w = "%s.states_created[%s]" % (where, s.get("name"))
        if "id_prefix_hex" in s:
            b = hexbytes(w, s["id_prefix_hex"])
            if b is not None and not 6 <= len(b) <= 20:
                err(w, "id prefix length %d not in 6..20" % len(b))
        for f in ("state_length", "state_address", "state_instruction", "minimum_access_length", "retention_priority"):
            v = s.get(f)
            if not isinstance(v, int) or not 0 <= v <= 65535:
                err(w, "%s must be a 16-bit integer" % f)
        if not 6 <= s.get("minimum_access_length", 0) <= 20:
            err(w, "minimum_access_length not in 6..20")
        if s.get("retention_priority") == 65535:
            err(w, "retention priority 65535 is reserved")
    if "compartment_state_count" in e and not isinstance(e["compartment_state_count"], int):
        err(where, "compartment_state_count must be an integer")
    return [e]


def check_message(where, msg, e, ep, transport, known_prefixes):
    h = parse_header(msg)
    nack = e.get("nack")
    herr = h["error"]
    desc = "%d bytes" % len(msg)
    if h.get("kind") == "upload" and "code_len" in h:
        desc += ", code_len %d dest %s" % (h["code_len"], h.get("destination", "0 (invalid)"))
        if "bytecode" in h:
            desc += ", input %d bytes" % len(h["input"])
    elif h.get("kind") == "state":
        desc += ", partial state id %s (%d bytes), input %d bytes" % (h["psid"], len(h["psid"]) // 2,
                                                                     len(h.get("input", b"")))
    if herr == "NOT_SIGCOMP":
        err(where, "first byte is not 11111xxx")
        return desc
    if herr:
        if nack != herr:
            err(where, "header is invalid (%s%s) but expected nack is %r" % (
                herr, ", %d bytecode bytes missing" % h["missing"] if "missing" in h else "", nack))
        return desc + " -> header error " + herr
    if nack in ("MESSAGE_TOO_SHORT", "INVALID_CODE_LOCATION"):
        err(where, "expected %s but header parses fine (%s)" % (nack, desc))
    umem = ep["dms"] - len(msg) if transport == "udp" else ep["dms"] // 2
    umem = min(umem, 65536)
    if h["kind"] == "upload":
        if h["destination"] + h["code_len"] > umem:
            err(where, "bytecode (%d bytes at %d) does not fit UDVM memory %d" % (h["code_len"], h["destination"], umem))
    elif h["kind"] == "state" and nack is None:
        if not any(p.startswith(h["psid"]) or h["psid"].startswith(p) for p in known_prefixes) \
                and not ep.get("local_states"):
            err(where, "partial state id %s matches no state announced by an earlier step" % h["psid"])
    return desc


def load_rfc_dumps(path):
    """Appendix A hex dumps of RFC 4465 (page headers/footers removed)."""
    text = open(path, encoding="utf-8", errors="replace").read()
    lines = [l.replace("\f", "") for l in text.split("\n")]
    lines = [l for l in lines if not re.match(r"^(Surtees & West\s+Informational\s+\[Page \d+\]|RFC 4465\s+SigComp Torture Tests\s+June 2006)$", l)]
    start = next(i for i, l in enumerate(lines) if l.startswith("Appendix A.  UDVM Bytecode"))
    blocks = {"message": [], "Input": [], "Output": []}
    cur, label = None, None
    for l in lines[start:] + [""]:
        s = l.strip()
        m = re.match(r"^(?:(Input|Output):\s*)?(0x[0-9a-fA-F ]+)$", s)
        if m and cur is not None and not m.group(1):
            cur += "".join(t[2:] if t.startswith("0x") else t for t in m.group(2).split()).lower()
            continue
        if cur is not None:
            blocks[label].append(cur)
            cur = None
        if m:
            label = m.group(1) or "message"
            cur = "".join(t[2:] if t.startswith("0x") else t for t in m.group(2).split()).lower()
    msgs, inputs = blocks["message"], blocks["Input"]
    return msgs, inputs


def rfc_compare(where, msg, stream_hex, dumps, review):
    """Compare message bytes with the RFC 4465 Appendix A dumps."""
    msgs, inputs = dumps
    if stream_hex is not None and stream_hex in msgs:
        return  # tcp stream printed verbatim in A.2.4
    hx = msg.hex()
    if hx in msgs:
        return
    h = parse_header(msg)
    if h["error"]:
        err(where, "message with invalid header is not a verbatim Appendix A dump")
        return
    head = msg[:h["header_len"]].hex()
    inp = msg[h["header_len"]:].hex()
    base = [d for d in msgs if d.startswith(head)]
    if not base:
        err(where, "SigComp header/bytecode not found in RFC 4465 Appendix A")
        return
    if any(inp == d[len(head):] for d in base) or inp in inputs:
        return
    review.append("  %s: header+bytecode from Appendix A, input 0x%s is not a literal Appendix A hex block%s" % (
        where, inp, " (tcp: framed with 0xFFFF)" if stream_hex is not None else ""))


def main(argv):
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rfc4465.json")
    rfc = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--rfc":
            rfc = args.pop(0)
        else:
            path = a
    doc = json.load(open(path))
    dumps = load_rfc_dumps(rfc) if rfc else None
    tests = doc.get("tests")
    if not isinstance(tests, list) or not tests:
        err("root", "'tests' must be a non-empty list")
        tests = []
    ids = set()
    nsteps = nmsgs = 0
    report = []
    not_in_rfc = []
    for t in tests:
        tid = t.get("id")
        w = "test %s" % tid
        if not isinstance(tid, str) or tid in ids:
            err(w, "missing or duplicate id")
        ids.add(tid)
        sec = t.get("section")
        if not isinstance(sec, str) or not re.match(r"^[234]\.\d+$", sec) or not tid.startswith(sec + "-"):
            err(w, "bad section %r (id must start with section + '-')" % sec)
        if not isinstance(t.get("title"), str):
            err(w, "missing title")
        ep = t.get("endpoint", {})
        if ep.get("dms") not in SIZES:
            err(w, "dms %r not an RFC 3320 value" % ep.get("dms"))
        if ep.get("cpb") not in (16, 32, 64, 128):
            err(w, "cpb %r not an RFC 3320 value" % ep.get("cpb"))
        if ep.get("sms") not in [0] + SIZES:
            err(w, "sms %r not an RFC 3320 value" % ep.get("sms"))
        tr = t.get("transport")
        if tr not in ("udp", "tcp"):
            err(w, "transport must be udp or tcp")
        steps = t.get("steps")
        if not isinstance(steps, list) or not steps:
            err(w, "no steps")
            continue
        known = []
        for k, s in enumerate(steps):
            sw = "%s step %d" % (w, k)
            nsteps += 1
            msg = hexbytes(sw + ".message_hex", s.get("message_hex"))
            comp = s.get("compartment", "missing")
            if comp is not None and not isinstance(comp, str):
                err(sw, "compartment must be a string or null")
            exps = check_expect(sw, s.get("expect"), tr)
            if msg is None:
                continue
            if tr == "udp":
                msgs = [msg]
            else:
                allm, left, ferr = deframe(msg)
                msgs = [m for m in allm if m]
                if ferr:
                    warn(sw, "tcp stream: %s" % ferr)
                if left:
                    report.append("  %s: %d trailing bytes not terminated by 0xFFFF (%s)" % (sw, len(left), left.hex()))
                if len(allm) != len(msgs):
                    report.append("  %s: %d empty record(s) (extra delimiters) ignored" % (sw, len(allm) - len(msgs)))
            if len(msgs) != len(exps):
                err(sw, "%d complete message(s) in the bytes but %d expectation(s)" % (len(msgs), len(exps)))
                continue
            for j, (m, e) in enumerate(zip(msgs, exps)):
                nmsgs += 1
                mw = sw + ("" if len(msgs) == 1 else " msg %d" % j)
                desc = check_message(mw, m, e, ep, tr, known)
                res = e.get("nack") or ("output %d bytes, %s cycles" % (len(e["output_hex"]) // 2, e.get("cycles")))
                report.append("  %-58s %-8s %s => %s" % (mw, tr, desc, res))
                if dumps is not None and not t.get("derived"):
                    rfc_compare(mw, m, s["message_hex"] if tr == "tcp" else None, dumps, not_in_rfc)
            for e in exps:
                for st in e.get("states_created", []):
                    if "id_prefix_hex" in st:
                        known.append(st["id_prefix_hex"])
    print("rfc4465.json: %d tests, %d steps, %d messages" % (len(tests), nsteps, nmsgs))
    print("\n".join(report))
    if not_in_rfc:
        print("messages that are not a verbatim Appendix A dump (review):")
        print("\n".join(not_in_rfc))
    for w_ in warnings:
        print("WARNING", w_)
    for e_ in errors:
        print("ERROR", e_)
    print("%d error(s), %d warning(s)" % (len(errors), len(warnings)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
