; sigkit LZ77 fragment: a byte-oriented LZ77 over the SigComp circular
; buffer. RFC 4464 §4.1.1 is the model (whole bytes read with INPUT-BYTES,
; strings copied into the circular buffer and output), but its tokens are
; (absolute position, length) pairs of 4 bytes into UDVM memory with a
; 256-byte table for literals; here tokens are relative (offset, length)
; copies plus literal runs, so a literal costs about one byte and no
; literal table is needed.
;
; Tokens, each starting with one control byte c:
;   c = 0x00-0x7F   literal run: the next c+1 bytes (1..128) are copied
;                   as they are
;   c = 0x80-0xFF   match: copy (c - 0x80) + 4 bytes (4..131) from offset
;                   back; the offset follows as 2 bytes, most significant
;                   first (1 .. buffer size)
; The message ends after its last token (a control byte is asked for and
; none is left). A literal run or offset cut short is a decompression
; failure.
;
; Every byte is read whole, so the bit order is the mechanism's default
; (input_bit_order 0: INPUT-BITS (8 or 16) reads bytes most significant
; first, RFC 3320 §8.2).
;
; Literal runs go straight from the input into the circular buffer
; (INPUT-BYTES obeys the byte copying rules of RFC 3320 §8.4, so the run
; wraps at byte_copy_right), are output from there, and a COPY-LITERAL of
; the run onto itself moves decompressed_pointer past it with the same
; wrap-around: 3 cycles per literal byte plus 7 per run.
;
; Scratch: index (control byte, then count), length_value (offset),
; old_pointer (where a copy starts).

; @vars

; @init

; @tokens
; Cycles per message byte, at most (RFC 3320 §9 costs): a literal run of c
; bytes costs 7 + 3c (INPUT-BITS, COMPARE, ADD, INPUT-BYTES 1 + c, OUTPUT
; 1 + c, COPY-LITERAL 1 + c, JUMP), 10 for c = 1; a match of l >= 4 bytes
; 8 + 2l <= 4l (INPUT-BITS, COMPARE, SUBTRACT, INPUT-BITS, LOAD,
; COPY-OFFSET 1 + l, OUTPUT 1 + l, JUMP).
set (lz77_cycles_per_byte, 10)
:next_character
INPUT-BITS (8, index, end_of_message)
COMPARE ($index, 128, lz77_literals, lz77_match, lz77_match)

:lz77_literals
ADD ($index, 1)
INPUT-BYTES ($index, $decompressed_pointer, fail)
OUTPUT ($decompressed_pointer, $index)
COPY-LITERAL ($decompressed_pointer, $index, $decompressed_pointer)
JUMP (next_character)

:lz77_match
SUBTRACT ($index, 124)
INPUT-BITS (16, length_value, fail)
LOAD (old_pointer, $decompressed_pointer)
COPY-OFFSET ($length_value, $index, $decompressed_pointer)
OUTPUT ($old_pointer, $index)
JUMP (next_character)
