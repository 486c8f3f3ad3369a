#!/usr/bin/env python3
"""Rebuild the seven Appendix C call flows of the 2005 SigComp performance thesis
into corpus/<flow>/NN-<sender>-<name>.sip, and write corpus/lengths.tsv and
corpus/flows.tsv.

Python 3 standard library only.  Usage:

    python3 corpus/build.py path/to/thesis.txt

The argument is a plain-text copy of the thesis.  The hand-written flow of
the Open SigComp characterisation (corpus/open-sigcomp-startup/) is not
generated here; its lengths.tsv rows are
recomputed from the files on disk.

What the rebuild does to the PDF-extracted text (see corpus/README.md):
  * drops stray blank lines and ``` fences inside a message;
  * re-joins header lines that the PDF broke across lines, with one space;
  * puts exactly one empty line between the headers and an SDP body
    (the body starts at its "v=0" line);
  * ends every line, body lines included, with CRLF;
  * rewrites a Content-Length whose value disagrees with the body when the
    correct value has the same number of digits (so the length is unchanged);
  * when the rebuilt message differs from the thesis's "Length uncompressed"
    by at most MAX_PAD bytes (a per-flow framing offset, see README), sets the
    amount of white space between "Content-Length:" and its value (RFC 3261
    HCOLON allows any, including none) so that the length is exact.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

MAX_PAD = 5

# (flow dir, thesis name, Appendix C section, thesis length table,
#  [(source section in Appendix C, sender, file name, thesis row, thesis length)])
# A thesis length of None: the thesis gives no length for that message.
FLOWS = [
    ("basic-voice-call", "Basic Voice Call", "14.3.1",
     "App. L 14.12.1 (also I 14.9, J 14.10.2.3-4)", [
         ("14.3.1.1", "ue", "INVITE", "INVITE", 514),
         ("14.3.1.2", "pcscf", "100-Trying", "100 Trying", 311),
         ("14.3.1.3", "pcscf", "180-Ringing", "180 Ringing", 615),
         ("14.3.1.4", "pcscf", "200-OK", "200 OK (1)", 610),
         ("14.3.1.5", "ue", "ACK", "ACK", 378),
         ("14.3.1.6", "ue", "BYE", None, None),
         ("14.3.1.7", "pcscf", "200-OK", None, None),
     ]),
    ("basic-video-call", "Basic Video Call", "14.3.2", "App. L 14.12.2", [
        ("14.3.2.1", "ue", "INVITE", "INVITE", 1069),
        ("14.3.2.2", "pcscf", "100-Trying", "100 Trying", 317),
        ("14.3.2.3", "pcscf", "180-Ringing", "180 Ringing", 472),
        ("14.3.2.4", "pcscf", "200-OK", "200 OK (1)", 663),
        ("14.3.2.5", "ue", "ACK", "ACK", 431),
        ("14.3.2.6", "ue", "BYE", None, None),
        ("14.3.2.7", "pcscf", "200-OK", None, None),
    ]),
    ("poc-session-establishment",
     "Push-to-talk over Cellular Session Establishment", "14.3.3",
     "App. L 14.12.3", [
         ("14.3.3.1", "ue", "INVITE", "INVITE", 980),
         ("14.3.3.2", "pcscf", "100-Trying", "100 Trying", 244),
         ("14.3.3.3", "pcscf", "200-OK", "200 OK (1)", 882),
         ("14.3.3.4", "ue", "ACK", "ACK", 380),
         ("14.3.3.5", "ue", "BYE", "BYE", 380),
         ("14.3.3.6", "pcscf", "200-OK", "200 OK (2)", 237),
     ]),
    ("3gpp-video-call", "3GPP Video Call", "14.3.4",
     "App. H 14.8 (same in D, E, F, J, L 14.12.5)", [
         ("14.3.4.1", "ue", "INVITE", "INVITE", 1437),
         ("14.3.4.2", "pcscf", "100-Trying", "100 Trying", 254),
         ("14.3.4.3", "pcscf", "183-Session-Progress", "183 Session Progress", 1440),
         ("14.3.4.4", "ue", "PRACK", "PRACK (1)", 1318),
         ("14.3.4.5", "pcscf", "200-OK", "200 OK (1)", 904),
         ("14.3.4.6", "ue", "UPDATE", "UPDATE", 1291),
         ("14.3.4.7", "pcscf", "200-OK", "200 OK (2)", 865),
         ("14.3.4.8", "pcscf", "180-Ringing", "180 Ringing", 563),
         ("14.3.4.9", "ue", "PRACK", "PRACK (2)", 717),
         ("14.3.4.10", "pcscf", "200-OK", "200 OK (3)", 260),
         ("14.3.4.11", "pcscf", "200-OK", "200 OK (4)", 1133),
         ("14.3.4.12", "ue", "ACK", "ACK", 458),
         ("14.3.4.13", "ue", "BYE", None, None),
         ("14.3.4.14", "pcscf", "200-OK", None, None),
     ]),
    ("3gpp-video-call-reinvite-unreliable",
     "3GPP Video Call with RE-INVITE and Unreliable Delivery of Provisional Responses",
     "14.3.5", "App. L 14.12.6", [
         ("14.3.5.1", "ue", "INVITE", "INVITE", 1205),
         ("14.3.5.2", "pcscf", "100-Trying", "100 Trying", 255),
         ("14.3.5.3", "pcscf", "180-Ringing", "180 Ringing", 1003),
         ("14.3.5.4", "pcscf", "200-OK", "200 OK (1)", 905),
         ("14.3.5.5", "ue", "ACK", "ACK", 459),
         ("14.3.5.6", "ue", "INVITE", "RE-INVITE", 1164),
         ("14.3.5.7", "pcscf", "200-OK", "200 OK (2)", 869),
         ("14.3.5.8", "ue", "ACK", "ACK", 459),
     ]),
    # 14.3.6.x "Same as ... 14.3.5.y" are resolved to the 14.3.5.y text.
    ("3gpp-video-call-reinvite-reliable",
     "3GPP Video Call with RE-INVITE and Reliable Delivery of Provisional Responses",
     "14.3.6", "App. L 14.12.7", [
         ("14.3.5.1", "ue", "INVITE", "INVITE", 1205),
         ("14.3.5.2", "pcscf", "100-Trying", "100 Trying", 255),
         ("14.3.5.3", "pcscf", "180-Ringing", "180 Ringing", 1003),
         ("14.3.6.4", "ue", "PRACK", "PRACK", 1318),
         ("14.3.6.5", "pcscf", "200-OK", "200 OK (1)", 261),
         ("14.3.5.4", "pcscf", "200-OK", "200 OK (2)", 905),
         ("14.3.5.5", "ue", "ACK", "ACK (1)", 459),
         ("14.3.5.6", "ue", "INVITE", "RE-INVITE", 1164),
         ("14.3.5.7", "pcscf", "200-OK", "200 OK (3)", 838),
         ("14.3.5.8", "ue", "ACK", "ACK (2)", 459),
     ]),
    ("3gpp-registration", "3GPP Registration Sequence", "14.3.7",
     "App. L 14.12.4", [
         ("14.3.7.1", "ue", "REGISTER", "REGISTER", 747),
         ("14.3.7.2", "pcscf", "401-Unauthorized", "401 Unauthorized", 476),
         ("14.3.7.3", "ue", "REGISTER", "REGISTER", 963),
         ("14.3.7.4", "pcscf", "200-OK", "200 OK (1)", 580),
     ]),
]

HEADER_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]*:")
SECTION_RE = re.compile(r"^(14\.3\.\d+\.\d+) ")


def find_seed(argv):
    if len(argv) > 1:
        return argv[1]
    sys.exit("usage: corpus/build.py path/to/thesis.txt (a plain-text copy of the thesis)")


def appendix_c_sections(text):
    """Map '14.3.x.y' -> list of raw lines of that message (body of App. C)."""
    lines = text.split("\n")
    # The table of contents also names Appendix C; take the last heading.
    starts = [i for i, l in enumerate(lines)
              if l.startswith("14.3 Appendix C")]
    start = starts[-1]
    end = next(i for i in range(start, len(lines))
               if lines[i].startswith("14.4 Appendix D"))
    out, cur = {}, None
    for l in lines[start + 1:end]:
        m = SECTION_RE.match(l)
        if m:
            cur = out.setdefault(m.group(1), [])
            continue
        if re.match(r"^14\.3\.\d+ ", l):
            cur = None
            continue
        if cur is not None:
            cur.append(l)
    return out


def rebuild(raw):
    """Return (start line, [headers], [body lines]) from raw extracted lines."""
    ls = [l.rstrip() for l in raw if l.strip() and l.strip() != "```"]
    start, headers, body, in_body = ls[0], [], [], False
    for l in ls[1:]:
        if not in_body and l.startswith("v=0"):
            in_body = True
        if in_body:
            body.append(l)
        elif HEADER_RE.match(l):
            headers.append(l)
        else:  # a header line the PDF broke in two
            headers[-1] += " " + l.strip()
    return start, headers, body


def serialise(start, headers, body, pad=0):
    body_bytes = "".join(l + "\r\n" for l in body)
    out = [start]
    notes = []
    for h in headers:
        name, _, value = h.partition(":")
        if name.lower() == "content-length":
            declared = value.strip()
            actual = str(len(body_bytes))
            if declared != actual:
                if len(declared) == len(actual):
                    notes.append("Content-Length %s->%s" % (declared, actual))
                    declared = actual
                else:
                    notes.append("Content-Length %s kept (body %s)" % (declared, actual))
            h = name + ":" + " " * (1 + pad) + declared
        out.append(h)
    msg = "".join(l + "\r\n" for l in out) + "\r\n" + body_bytes
    return msg.encode("ascii"), notes


def main(argv):
    seed = find_seed(argv)
    with open(seed, encoding="utf-8") as f:
        sections = appendix_c_sections(f.read())
    rows, flow_rows = [], []
    for flow, name, sect, table, msgs in FLOWS:
        d = os.path.join(HERE, flow)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):
            if old.endswith(".sip"):
                os.remove(os.path.join(d, old))
        for n, (src, sender, fname, row, target) in enumerate(msgs, 1):
            start, headers, body = rebuild(sections[src])
            faithful, notes = serialise(start, headers, body)
            pad = 0
            if target is not None and 0 < abs(target - len(faithful)) <= MAX_PAD:
                pad = target - len(faithful)
            data, _ = serialise(start, headers, body, pad)
            fn = "%02d-%s-%s.sip" % (n, sender, fname)
            with open(os.path.join(d, fn), "wb") as f:
                f.write(data)
            if target is None:
                match = "n/a"
            else:
                match = "yes" if len(data) == target else "no"
            rows.append([flow, fn, "-" if target is None else str(target),
                         str(len(data)), match, str(pad), str(len(faithful)),
                         src, row or "-", table, "; ".join(notes) or "-"])
        flow_rows.append([flow, name, "Appendix C " + sect, str(len(msgs)), table])
    write_tsv(rows, flow_rows)


def write_tsv(rows, flow_rows):
    # The hand-written flow of the Open SigComp characterisation (not generated here).
    extra = os.path.join(HERE, "open-sigcomp-startup")
    sizes = [850, 468, 1168, 483, 418, 1360, 393, 632, 405, 405, 384]
    labels = ["REGISTER", "200", "INVITE", "407", "ACK", "INVITE", "100",
              "200", "ACK", "BYE", "200"]
    if os.path.isdir(extra):
        files = sorted(f for f in os.listdir(extra) if f.endswith(".sip"))
        for fn, size, label in zip(files, sizes, labels):
            with open(os.path.join(extra, fn), "rb") as f:
                n = len(f.read())
            rows.append(["open-sigcomp-startup", fn, str(size), str(n),
                         "yes" if n == size else "no", "0", str(n),
                         "synthetic", label, "the Open SigComp characterisation Table 2", "-"])
        flow_rows.append(["open-sigcomp-startup",
                          "Open SigComp characterisation: registration + call (Table 2)",
                          "the Open SigComp characterisation section 2.2.1", str(len(files)),
                          "the Open SigComp characterisation Table 2"])
    with open(os.path.join(HERE, "lengths.tsv"), "w", newline="\n") as f:
        f.write("flow\tfile\tthesis_length\tour_length\tmatch\tpad\t"
                "faithful_length\tsource\tthesis_row\tthesis_table\tnotes\n")
        for r in rows:
            f.write("\t".join(r) + "\n")
    with open(os.path.join(HERE, "flows.tsv"), "w", newline="\n") as f:
        f.write("flow\tthesis_name\tsection\tmessages\tlength_table\n")
        for r in flow_rows:
            f.write("\t".join(r) + "\n")


if __name__ == "__main__":
    main(sys.argv)
