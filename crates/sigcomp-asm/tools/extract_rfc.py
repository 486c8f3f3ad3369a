#!/usr/bin/env python3
"""Extract the assembly sources and the expected bytecode of RFC 4465 (torture
tests) and RFC 4464 (users' guide examples) into tests/rfc4465 and tests/rfc4464.

Usage: python3 tools/extract_rfc.py DIR

DIR holds the RFC texts as rfc4464.txt and rfc4465.txt.

The line ranges below were picked by hand from the RFC text; page headers and
footers ("Surtees & West ... [Page N]", "RFC 446x ... 2006") and form feeds are
dropped and the 3-space RFC indentation is removed.  The expected bytecode is
the Appendix A hex with the SigComp header (0xf8, code_len, destination)
removed; for messages the header is checked against the bytecode length.
"""
import os
import re
import sys

if len(sys.argv) != 2:
    sys.exit("usage: tools/extract_rfc.py DIR (the directory holding rfc4464.txt and rfc4465.txt)")
STD = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, "..", "tests")

PAGE = re.compile(r"^(Surtees & West .*\[Page \d+\]|RFC 446[45] .*(May|June) 2006)\s*$")


def lines_of(name):
    with open(os.path.join(STD, name), encoding="ascii") as f:
        return f.read().replace("\f", "").split("\n")


def block(lines, first, last):
    """Lines first..last (1-based, inclusive) without page furniture."""
    out = []
    for l in lines[first - 1:last]:
        if PAGE.match(l):
            continue
        out.append(l[3:] if l.startswith("   ") else l.lstrip())
    # collapse the runs of blank lines a page break leaves behind
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    return text


def hexblock(lines, first, last):
    """Concatenate the hex of lines first..last ("0x" prefixes, spaces dropped)."""
    h = ""
    for l in lines[first - 1:last]:
        if PAGE.match(l):
            continue
        l = l.strip()
        if not l:
            continue
        l = l[2:] if l.startswith("0x") else l
        h += l.replace(" ", "")
    assert re.fullmatch(r"([0-9a-f]{2})*", h), (first, last, h)
    return h


def strip_header(msg):
    b = bytes.fromhex(msg)
    assert b[0] == 0xF8, msg[:8]
    code_len = (b[1] << 4) | (b[2] >> 4)
    dest = ((b[2] & 0x0F) + 1) * 64
    code = b[3:3 + code_len]
    assert len(code) == code_len, (code_len, len(code))
    return dest, code, b[3 + code_len:]


def unframe(stream):
    """RFC 3320 section 4.2.2 record marking: returns the list of messages."""
    msgs, cur, i = [], bytearray(), 0
    while i < len(stream):
        b = stream[i]
        if b != 0xFF:
            cur.append(b)
            i += 1
            continue
        n = stream[i + 1]
        if n == 0xFF:
            if cur:
                msgs.append(bytes(cur))
            cur = bytearray()
            i += 2
        else:
            assert n <= 0x7F
            cur.append(0xFF)
            cur += stream[i + 2:i + 2 + n]
            i += 2 + n
    return msgs


def write(path, text):
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def out_hex(path, dest, code, note):
    body = code.hex()
    rows = [body[i:i + 64] for i in range(0, len(body), 64)]
    write(path, "# %s\n# destination %d, code_len %d\n%s\n" % (note, dest, len(code), "\n".join(rows)))


# ---------------------------------------------------------------- RFC 4465
t = lines_of("rfc4465.txt")
SRC_4465 = {
    # name: (first, last) line range of the assembly in sections 2-4
    "2.1-bit-manipulation": (231, 264),
    "2.2-arithmetic": (293, 353),
    "2.3-sorting": (370, 385),
    "2.4-sha1": (410, 468),
    "2.5-load-multiload": (492, 536),
    "2.6-copy": (606, 658),
    "2.7-copy-literal-offset": (686, 749),
    "2.8-memset": (766, 804),
    "2.9-crc": (815, 860),
    "2.10-input-bits": (881, 927),
    "2.11-input-huffman": (959, 982),
    "2.12-input-bytes": (1029, 1059),
    "2.13-stack": (1127, 1195),
    "2.14-program-flow": (1209, 1267),
    "2.15-state-creation": (1305, 1384),
    "2.16-state-access-setup": (1463, 1481),
    "2.16-state-access": (1485, 1547),
    "3.1-useful-values": (1594, 1696),
    "3.2-cycles-checking": (1743, 1762),
    "3.3-message-based": (1799, 1820),
    "3.4-stream-based": (1879, 1896),
    "3.5-input-past-end": (1986, 2069),
    "4.1-feedback": (2101, 2179),
    "4.2-state-memory": (2285, 2425),
    "4.3-multiple-compartments": (2489, 2629),
    "4.4-rfc3485-state": (2735, 2765),
    "4.5-bytecode-state-creation": (2807, 2881),
}
# Appendix A: line range of the hex of the (first) SigComp message.
HEX_4465 = {
    "2.1-bit-manipulation": ("A.1.1", 2999, 3005),
    "2.2-arithmetic": ("A.1.2", 3033, 3039),
    "2.3-sorting": ("A.1.3", 3053, 3061),
    "2.4-sha1": ("A.1.4", 3089, 3094),
    "2.5-load-multiload": ("A.1.5", 3105, 3107),
    "2.6-copy": ("A.1.6", 3121, 3123),
    "2.7-copy-literal-offset": ("A.1.7", 3145, 3148),
    "2.8-memset": ("A.1.8", 3157, 3158),
    "2.9-crc": ("A.1.9", 3166, 3167),
    "2.10-input-bits": ("A.1.10", 3178, 3178),
    "2.11-input-huffman": ("A.1.11", 3201, 3202),
    "2.12-input-bytes": ("A.1.12", 3210, 3211),
    "2.13-stack": ("A.1.13", 3221, 3233),
    "2.14-program-flow": ("A.1.14", 3257, 3259),
    "2.15-state-creation": ("A.1.15", 3267, 3272),
    "2.16-state-access-setup": ("A.1.16 set-up message", 3322, 3337),
    "2.16-state-access": ("A.1.16 second message", 3341, 3356),
    "3.1-useful-values": ("A.2.1", 3388, 3391),
    "3.2-cycles-checking": ("A.2.2", 3425, 3426),
    "3.3-message-based": ("A.2.3 third message", 3443, 3444),
    "3.4-stream-based": ("A.2.4", 3467, 3469),
    "3.5-input-past-end": ("A.2.5", 3511, 3513),
    "4.1-feedback": ("A.3.1", 3539, 3542),
    "4.2-state-memory": ("A.3.2", 3554, 3571),
    "4.3-multiple-compartments": ("A.3.3", 3612, 3628),
    "4.4-rfc3485-state": ("A.3.4", 3674, 3676),
    "4.5-bytecode-state-creation": ("A.3.5", 3684, 3686),
}

d = os.path.join(TESTS, "rfc4465")
for name, (a, b) in SRC_4465.items():
    write(os.path.join(d, name + ".asm"),
          "; RFC 4465 section %s, lines %d-%d of rfc4465.txt\n\n" % (name.split("-")[0], a, b)
          + block(t, a, b))
for name, (sec, a, b) in HEX_4465.items():
    h = hexblock(t, a, b)
    raw = bytes.fromhex(h)
    if name.startswith("3.4"):
        msgs = unframe(raw)
        assert len(msgs) == 2, msgs
        dest, code, rest = strip_header(msgs[0].hex())
        assert rest == b"", rest
        dest2, code2, _ = strip_header(msgs[1].hex())
        out_hex(os.path.join(d, name + ".hex"), dest, code,
                "RFC 4465 Appendix %s, first message of the stream (record marking removed)" % sec)
        out_hex(os.path.join(d, name + "-at%d.hex" % dest2), dest2, code2,
                "RFC 4465 Appendix %s, second message of the stream (record marking removed)" % sec)
        continue
    dest, code, rest = strip_header(h)
    note = "RFC 4465 Appendix %s, rfc4465.txt lines %d-%d, SigComp header removed" % (sec, a, b)
    if rest:
        # 4.5: the message carries its compressed input after the bytecode
        note += "; compressed data after the bytecode (not included): %s" % rest.hex()
    out_hex(os.path.join(d, name + ".hex"), dest, code, note)

# ---------------------------------------------------------------- RFC 4464
u = lines_of("rfc4464.txt")
SRC_4464 = {
    "4.1.1-lz77": (720, 822),
    "4.1.2-lzss": (908, 979),
    "4.1.3-lzw": (1017, 1114),
    "4.1.4-deflate": (1155, 1284),
    "4.1.5-lzjh": (1311, 1542),
    "4.2.1-modified-deflate": (1579, 1706),
}
HEX_4464 = {
    "4.1.1-lz77": ("A.1.1", 2206, 2207),
    "4.1.2-lzss": ("A.1.2", 2211, 2213),
    "4.1.3-lzw": ("A.1.3", 2217, 2219),
    "4.1.4-deflate": ("A.1.4", 2223, 2233),
    "4.1.5-lzjh": ("A.1.5", 2249, 2257),
    "4.2.1-modified-deflate": ("A.2.1", 2263, 2275),
}
# Example compressed messages printed after each algorithm.
MSG_4464 = {
    "4.1.1-lz77": (829, 834),
    "4.1.2-lzss": (984, 984),
    "4.1.3-lzw": (1130, 1131),
    "4.1.4-deflate": (1298, 1299),
    "4.1.5-lzjh": (1547, 1548),
    "4.2.1-modified-deflate": (1711, 1713),
}
d = os.path.join(TESTS, "rfc4464")
for name, (a, b) in SRC_4464.items():
    write(os.path.join(d, name + ".asm"),
          "; RFC 4464 section %s, lines %d-%d of rfc4464.txt\n\n" % (name.split("-")[0], a, b)
          + block(u, a, b))
# Appendix A prints only the bytecode, without a SigComp header; it is loaded
# at the first instruction, which each source puts at "align (64)" after its
# variables: 128, except DEFLATE, whose tables (at 72..307) push it to 320.
DEST_4464 = {"4.1.4-deflate": 320}
for name, (sec, a, b) in HEX_4464.items():
    code = bytes.fromhex(hexblock(u, a, b))
    out_hex(os.path.join(d, name + ".hex"), DEST_4464.get(name, 128), code,
            "RFC 4464 Appendix %s, rfc4464.txt lines %d-%d (bytecode from the first instruction)" % (sec, a, b))
for name, (a, b) in MSG_4464.items():
    m = hexblock(u, a, b)
    write(os.path.join(d, name + ".msg"),
          "# RFC 4464 section %s example compressed message, rfc4464.txt lines %d-%d\n%s\n"
          % (name.split("-")[0], a, b, m))
print("ok")
