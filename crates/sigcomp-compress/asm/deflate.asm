; sigkit Deflate fragment: the symbols of one RFC 1951 block compressed with
; the FIXED Huffman codes (BTYPE=01, RFC 1951 §3.2.6), decoded with
; INPUT-HUFFMAN as in RFC 4464 §4.1.4, over the SigComp circular buffer.
;
; The message carries the block body only: the 3-bit block header
; (BFINAL=1, BTYPE=01) is implied, so it is not sent. The body ends either
; with the end-of-block symbol 256 or where the input runs out: the
; encoder sends no end-of-block symbol, because the zero bits that pad the
; last byte either are too few for a code (INPUT-HUFFMAN then runs out of
; input) or are the 7-bit code 0000000, which IS end-of-block.
;
; Bits are packed as RFC 1951 §3.1.1 says, hence input_bit_order 5
; (RFC 3320 §8.2): P=1, bytes are consumed from their least significant
; bit; F=1, extra-bit values (INPUT-BITS) arrive least significant bit
; first; H=0, Huffman codes (INPUT-HUFFMAN) arrive most significant bit
; first.
;
; Unlike RFC 4464 §4.1.4, there are no length/distance tables in memory
; (they would cost 236 bytes of bytecode in every upload and of every
; snapshot): the base and extra-bit count of a length or distance code are
; computed from the code (RFC 1951 §3.2.5):
;   length code 257+i: i < 8: length 3+i; 8 <= i < 28: e = i/4 - 1 extra
;                      bits, base 3 + ((4 + i%4) << e); i = 28 (285): 258
;   distance code d:   d < 4: distance 1+d; 4 <= d < 30: e = d/2 - 1 extra
;                      bits, base 1 + ((2 + d%2) << e)
; Codes the fixed code does not define (literal/length 286, 287; distance
; 30, 31) match no INPUT-HUFFMAN interval: decompression failure.
; The encoder copies from at most the buffer size back (and at most 32768,
; RFC 1951's limit); COPY-OFFSET wraps in the circular buffer (RFC 3320
; §8.4, RFC 4896 §4), so a distance equal to the buffer size reads the
; oldest byte.
;
; Scratch: index (symbol, then distance code, extra bits), length_value
; (match length), old_pointer (distance, then where the copy starts).

; @vars

; @init
; RFC 3320 §8.2: P=1, H=0, F=1 as RFC 1951 packs its bits.
set (deflate_input_bit_order, 5)
LOAD (input_bit_order, deflate_input_bit_order)

; @tokens
; Cycles per message byte, at most (RFC 3320 §9 costs): a literal costs 11
; (INPUT-HUFFMAN with 4 sets 5, COMPARE, OUTPUT 2, COPY-LITERAL 2, JUMP).
; A match of l bytes costs 6 (INPUT-HUFFMAN, COMPARE), then 4 for the
; length (3..10), 15 (11..257, extra bits) or 6 (258), then 5 for the
; distance (1..4) or 14 (5.., extra bits), then 4 + 2l (LOAD, COPY-OFFSET,
; OUTPUT, JUMP): at most 28 + 2l <= 12l for l = 3..10 and 39 + 2l <= 12l
; for l >= 11.
set (deflate_cycles_per_byte, 12)
:next_character
; RFC 1951 §3.2.6 fixed literal/length code:
;   0000000-0010111 (7 bits)    256-279
;   00110000-10111111 (8 bits)  0-143
;   11000000-11000101 (8 bits)  280-285
;   110010000-111111111 (9 bits) 144-255
INPUT-HUFFMAN (index, end_of_message, 4,
    7, 0, 23, 256,
    1, 48, 191, 0,
    0, 192, 197, 280,
    1, 400, 511, 144)
COMPARE ($index, 256, deflate_literal, end_of_message, deflate_length)

:deflate_literal
OUTPUT ((index + 1), 1)
COPY-LITERAL ((index + 1), 1, $decompressed_pointer)
JUMP (next_character)

:deflate_length
SUBTRACT ($index, 257)
LOAD (length_value, $index)
ADD ($length_value, 3)
COMPARE ($index, 8, deflate_distance, deflate_length_extra, deflate_length_extra)
:deflate_length_extra
LOAD (length_value, 258)
COMPARE ($index, 28, deflate_length_group, deflate_distance, deflate_distance)
:deflate_length_group
LOAD (length_value, $index)
AND ($length_value, 3)
OR ($length_value, 4)
RSHIFT ($index, 2)
SUBTRACT ($index, 1)
LSHIFT ($length_value, $index)
ADD ($length_value, 3)
INPUT-BITS ($index, index, fail)
ADD ($length_value, $index)

:deflate_distance
; RFC 1951 §3.2.6: distance codes are fixed 5-bit codes 0-29.
INPUT-HUFFMAN (index, fail, 1, 5, 0, 29, 0)
LOAD (old_pointer, $index)
ADD ($old_pointer, 1)
COMPARE ($index, 4, deflate_copy, deflate_distance_group, deflate_distance_group)
:deflate_distance_group
LOAD (old_pointer, $index)
AND ($old_pointer, 1)
OR ($old_pointer, 2)
RSHIFT ($index, 1)
SUBTRACT ($index, 1)
LSHIFT ($old_pointer, $index)
ADD ($old_pointer, 1)
INPUT-BITS ($index, index, fail)
ADD ($old_pointer, $index)

:deflate_copy
; old_pointer holds the distance; index takes the copy's start for OUTPUT.
LOAD (index, $decompressed_pointer)
COPY-OFFSET ($old_pointer, $length_value, $decompressed_pointer)
OUTPUT ($index, $length_value)
JUMP (next_character)
