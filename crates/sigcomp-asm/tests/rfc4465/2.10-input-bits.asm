; RFC 4465 section 2.10, lines 881-927 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:result                         pad (2)

at (128)

:start

INPUT-BITS ($input_bit_order, result, end_of_message) ; reads in
                              ; exactly as many bits as the 2-byte
                              ; value written in the input_bit_order
                              ; register, get out of the loop when
                              ; no more bits are available at input.

OUTPUT (result, 2) ; outputs as a 2-byte integer
                   ; the previously read bits

ADD ($input_bit_order, 1)      ; if at the beginning of this loop the
                               ; register input_bit_order is 0,
REMAINDER ($input_bit_order, 7) ; then its value varies periodically
                               ; like this: 2, 4, 6, 1, 3, 5, 7.
ADD ($input_bit_order, 1)      ; that gives for the FHP bits: 010,
                               ; 100, 110, 001, 011, 101, 111

JUMP (start)                    ; run the loop once more

:end_of_message

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
