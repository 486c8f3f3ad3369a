; RFC 4465 section 3.5, lines 1986-2069 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:result                         pad (1)
:result_lsb                     pad (6)
:right

at (128)

LOAD (byte_copy_left, result)
LOAD (byte_copy_right, right)

:start

; Input bits to ensure that the remaining message is not byte aligned

INPUT-BITS (9, result, decompression_failure1) ; Input 0x1FF (9 bits)

; Attempt to read 7 bytes

INPUT-BYTES (7, result, next_bytes) ; This should fail, throw away
                                    ; 7 bits with value Ox7a and
                                    ; jump to next_bytes

:decompression_failure1
DECOMPRESSION-FAILURE               ; This instruction is never
                                    ; executed but is used to
                                    ; separate success and failure
                                    ; to input bytes.

:next_bytes

; Read 7 bits - this removes the byte alignment of the message

; If the bits have not been thrown away where they should be, then
; the message will be 1 byte longer than necessary and the output
; will be incorrect.

INPUT-BITS (7, result, decompression_failure1) ; Input 0x00 (7 bits)

; Read 2 bytes

INPUT-BYTES (2, result, decompression_failure1)
                                    ; Throw away 1 bit value 0
                                    ; Input 0x6869
OUTPUT (result, 2)                  ; Output 0x6869

                                    ; Attempt to read more bits than
INPUT-BITS (16, result, bits)       ; there are to ensure they
                                    ; remain available

:decompression_failure2
DECOMPRESSION-FAILURE               ; This instruction is never
                                    ; executed but is used to
                                    ; separate success and failure
                                    ; to input bits.

:bits

; Read 8 bits

INPUT-BITS (8, result, decompression_failure2) ; Input 0x21 or fail
OUTPUT (result_lsb, 1)              ; Output 0x21

:end_message

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
