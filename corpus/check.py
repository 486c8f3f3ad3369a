#!/usr/bin/env python3
"""Check the SIP message corpus (Python 3 standard library only).

    python3 corpus/check.py            # from the repository root, or
    python3 check.py                   # from corpus/

For every corpus/<flow>/NN-<sender>-<name>.sip it verifies that
  * every line ends in CRLF (no bare LF, no bare CR);
  * the file parses as a SIP start line, header lines, an empty line, a body;
  * requests come from the UE and responses from the P-CSCF (file name);
  * Content-Length, where present, equals the body length (a mismatch is only
    reported, not fatal, for files listed in EXPECTED_CL_MISMATCH);
  * the byte length equals lengths.tsv's our_length, the match column agrees
    with thesis_length, the pad column agrees with the white space after
    "Content-Length:", and every unmatched message is listed in README.md;
  * flows.tsv's message counts agree with the directories and files are
    numbered 01..N without gaps.
Exits 1 on any unexpected finding, 0 otherwise.
"""
import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# "flow/file" whose Content-Length the thesis's own numbers force to disagree
# with the body.  Empty: every declared Content-Length could be made correct
# without changing a message's length (see README.md).
EXPECTED_CL_MISMATCH = set()

FILE_RE = re.compile(r"^(\d\d)-(ue|pcscf)-([A-Za-z0-9-]+)\.sip$")
REQUEST_RE = re.compile(r"^([A-Z]+) (\S+) SIP/2\.0$")
STATUS_RE = re.compile(r"^SIP/2\.0 ([1-6]\d\d) (.+)$")
HEADER_RE = re.compile(r"^([!%'*+.0-9A-Z^_`a-z~-]+)([ \t]*):([ \t]*)(.*)$")


class Checker:
    def __init__(self):
        self.errors = []
        self.notes = []

    def error(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    def note(self, where, msg):
        self.notes.append("%s: %s" % (where, msg))


def parse_sip(data, where, ck):
    """Return dict(kind, start, headers, body, cl_ws) or None on failure."""
    # Line endings: every LF preceded by CR, every CR followed by LF.
    for i, b in enumerate(data):
        if b == 0x0A and (i == 0 or data[i - 1] != 0x0D):
            ck.error(where, "bare LF at byte %d" % i)
            return None
        if b == 0x0D and (i + 1 >= len(data) or data[i + 1] != 0x0A):
            ck.error(where, "bare CR at byte %d" % i)
            return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        ck.error(where, "not UTF-8: %s" % e)
        return None
    head, sep, body = text.partition("\r\n\r\n")
    if not sep:
        ck.error(where, "no empty line (CRLF CRLF) after the headers")
        return None
    lines = head.split("\r\n")
    start = lines[0]
    m = REQUEST_RE.match(start)
    if m:
        kind = ("request", m.group(1))
    else:
        m = STATUS_RE.match(start)
        if not m:
            ck.error(where, "bad start line %r" % start)
            return None
        kind = ("response", m.group(1))
    headers = []
    for l in lines[1:]:
        if l[:1] in (" ", "\t"):
            if not headers:
                ck.error(where, "continuation line before any header")
                return None
            headers[-1][1] += " " + l.strip()
            continue
        hm = HEADER_RE.match(l)
        if not hm:
            ck.error(where, "bad header line %r" % l)
            return None
        headers.append([hm.group(1), hm.group(4), hm.group(3)])
    return {"kind": kind, "start": start, "headers": headers, "body": body}


def main():
    ck = Checker()
    with open(os.path.join(HERE, "lengths.tsv"), newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    with open(os.path.join(HERE, "flows.tsv"), newline="") as f:
        flows = list(csv.DictReader(f, delimiter="\t"))
    with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()

    by_key = {}
    for r in rows:
        key = r["flow"] + "/" + r["file"]
        if key in by_key:
            ck.error("lengths.tsv", "duplicate row %s" % key)
        by_key[key] = r

    seen = set()
    counts = {"yes": 0, "no": 0, "n/a": 0}
    for flow in flows:
        d = os.path.join(HERE, flow["flow"])
        if not os.path.isdir(d):
            ck.error("flows.tsv", "missing directory %s" % flow["flow"])
            continue
        files = sorted(x for x in os.listdir(d) if x.endswith(".sip"))
        if len(files) != int(flow["messages"]):
            ck.error(flow["flow"], "flows.tsv says %s messages, directory has %d"
                     % (flow["messages"], len(files)))
        for n, fn in enumerate(files, 1):
            key = flow["flow"] + "/" + fn
            seen.add(key)
            fm = FILE_RE.match(fn)
            if not fm:
                ck.error(key, "file name is not NN-<ue|pcscf>-<name>.sip")
                continue
            if int(fm.group(1)) != n:
                ck.error(key, "expected number %02d" % n)
            with open(os.path.join(d, fn), "rb") as f:
                data = f.read()
            msg = parse_sip(data, key, ck)
            if msg is None:
                continue
            sender = fm.group(2)
            kind, what = msg["kind"]
            want = "ue" if kind == "request" else "pcscf"
            if sender != want:
                ck.error(key, "%s %s but sender is %s" % (kind, what, sender))
            name = fm.group(3)
            if not name.startswith(what):
                ck.error(key, "name %s does not start with %s" % (name, what))
            cls = [h for h in msg["headers"] if h[0].lower() in ("content-length", "l")]
            body_len = len(msg["body"].encode("utf-8"))
            if len(cls) > 1:
                ck.error(key, "several Content-Length headers")
            if cls:
                declared = cls[0][1].strip()
                if not declared.isdigit() or int(declared) != body_len:
                    text = "Content-Length %s but body is %d bytes" % (declared, body_len)
                    if key in EXPECTED_CL_MISMATCH:
                        ck.note(key, text + " (expected, see README)")
                    else:
                        ck.error(key, text)
            elif body_len:
                ck.error(key, "body of %d bytes but no Content-Length" % body_len)
            r = by_key.get(key)
            if r is None:
                ck.error(key, "no row in lengths.tsv")
                continue
            if int(r["our_length"]) != len(data):
                ck.error(key, "file is %d bytes, lengths.tsv says %s"
                         % (len(data), r["our_length"]))
            pad = int(r["pad"])
            if int(r["faithful_length"]) != len(data) - pad:
                ck.error(key, "faithful_length != our_length - pad")
            if cls and len(cls[0][2]) != 1 + pad:
                ck.error(key, "pad %d but %d spaces after Content-Length:"
                         % (pad, len(cls[0][2])))
            if r["thesis_length"] == "-":
                expect = "n/a"
            else:
                expect = "yes" if int(r["thesis_length"]) == len(data) else "no"
            if r["match"] != expect:
                ck.error(key, "match column %s, should be %s" % (r["match"], expect))
            counts[expect] += 1
            if expect == "no":
                ck.note(key, "thesis length %s, ours %d (expected, listed in README)"
                        % (r["thesis_length"], len(data)))
            if expect != "yes" and key not in readme:
                ck.error(key, "unmatched length but not listed in README.md")
    for key in by_key:
        if key not in seen:
            ck.error("lengths.tsv", "row for missing file %s" % key)

    for n in ck.notes:
        print("note:", n)
    print("%d messages: %d lengths match the source, %d do not, %d have no source length"
          % (len(seen), counts["yes"], counts["no"], counts["n/a"]))
    if ck.errors:
        for e in ck.errors:
            print("ERROR:", e)
        print("%d unexpected finding(s)" % len(ck.errors))
        return 1
    print("corpus OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
