; LZSS token decoder (fragment of asm/mechanism.asm, see asm/README.md):
; the modified LZSS of the 2005 SigComp performance thesis §7.8.4,
; offsets of up to 15 bits over the circular buffer. Tokens, most
; significant bit first (input_bit_order 0):
;   0 + 7 bits                       literal byte 0..127 (SIP is ASCII)
;   10 + 7 bits                      literal byte 128..255
;   11 + offset_bits + length code   copy length bytes from offset
;                                    (1 .. 2^offset_bits) back
; Where the thesis gives the length a fixed field sized by the look-ahead,
; sigkit uses a prefix code, so the many short matches cost less:
;   0  + 2 bits   lengths 3..6
;   10 + 4 bits   lengths 7..22
;   11 + 8 bits   lengths 23..278
; (the compressor's look-ahead, 18, 66 or 258, only bounds the length).
; The message ends where fewer bits remain than a token needs.
; @vars
; @init
; @tokens
; Cycles per message byte, at most (RFC 3320 §9 costs): a literal token
; costs 10 (INPUT-HUFFMAN with 3 sets 4, COMPARE, OUTPUT 2, COPY-LITERAL 2,
; JUMP), a match of l bytes 14 + 2l <= 10l for l >= 3.
set (lzss_cycles_per_byte, 10)
:next_character
INPUT-HUFFMAN (index, end_of_message, 3, 8, 0, 127, 0, 1, 256, 383, 128, $lzss_offset_extra_bits, $lzss_offset_lower, $lzss_offset_upper, 257)
COMPARE ($index, 256, lzss_literal, lzss_match, lzss_match)
:lzss_literal
set (index_lsb, (index + 1))
OUTPUT (index_lsb, 1)
COPY-LITERAL (index_lsb, 1, $decompressed_pointer)
JUMP (next_character)
:lzss_match
SUBTRACT ($index, 256)
INPUT-HUFFMAN (length_value, fail, 3, 3, 0, 3, 3, 3, 32, 47, 7, 4, 768, 1023, 23)
LOAD (old_pointer, $decompressed_pointer)
COPY-OFFSET ($index, $length_value, $decompressed_pointer)
OUTPUT ($old_pointer, $length_value)
JUMP (next_character)
; Set per peer by the compressor (src/bytecode.rs); not readonly, so the
; assembler never points a `!` operand at these zeros.
readonly (0)
:lzss_offset_extra_bits         word (0)
:lzss_offset_lower              word (0)
:lzss_offset_upper              word (0)
readonly (1)
