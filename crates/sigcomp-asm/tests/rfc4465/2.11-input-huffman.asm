; RFC 4465 section 2.11, lines 959-982 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:result                         pad (2)

at (128)

:start

INPUT-HUFFMAN (result, end_of_message, 2, $input_bit_order, 0,
$input_bit_order, $input_bit_order, $input_bit_order, 0, 65535, 0)
OUTPUT (result, 2)

ADD ($input_bit_order, 1)
REMAINDER ($input_bit_order, 7)
ADD ($input_bit_order, 1)

JUMP (start)

:end_of_message

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
