; RFC 4465 section 2.12, lines 1029-1059 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:result                         pad (2)
:output_start                   pad (4)
:output_end

at (128)

LOAD (byte_copy_left, output_start)
LOAD (byte_copy_right, output_end)

:start

INPUT-BITS ($input_bit_order, result, end_of_message)
OUTPUT (result, 2)

ADD ($input_bit_order, 2)
REMAINDER ($input_bit_order, 7)

INPUT-BYTES ($input_bit_order, output_start, end_of_message)
OUTPUT (output_start, $input_bit_order)

ADD ($input_bit_order, 1)
JUMP (start)

:end_of_message

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
