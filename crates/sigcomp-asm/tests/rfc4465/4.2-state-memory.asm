; RFC 4465 section 4.2, lines 2285-2425 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:order                          pad (2)
:type                           pad (1)
:type_lsb                       pad (1)
:state_length                   pad (2)
:state_retention_priority       pad (2)

at(127)
:decompression_failure
at (128)

MULTILOAD (byte_copy_left, 2, state_start, order_data)

INPUT-BYTES (1, type_lsb, decompression_failure)
COMPARE ($type, 5, general_test, large_state, verify_state)

:general_test

COMPARE ($type, 3, start, state_present, state_not_present)

:start

MULTIPLY ($type, 6)
ADD ($type, order_data)
LOAD (order, $type)
ADD ($type, 6)

; Finish with the value (order_data + 6*n) in order where
; n is the input value 0x00, 0x01, or 0x02
; type = order + 6
; These values are used to index into the 'order_data'
; that is used to work out state retention priorities and lengths

:loop

COPY ($order, 2, state_retention_priority)
COMPARE ($order, $type, continue, end, decompression_failure)

:continue

;  Set up a state creation each time through the loop

LOAD (state_length, $state_retention_priority)
MULTIPLY ($state_length, 256)
STATE-CREATE ($state_length, state_start, 0, 6,
$state_retention_priority)

ADD ($order, 2)
JUMP (loop)

:state_present

; Access the states that should be present
STATE-ACCESS (state_identifier_a, 6, 0, 0, 0, 0)
STATE-ACCESS (state_identifier_b, 6, 0, 0, 0, 0)

STATE-ACCESS (state_identifier_c, 6, 0, 0, 0, 0)
STATE-ACCESS (state_identifier_e, 6, 0, 0, 0, 0)
JUMP (end)

:state_not_present

; Check that the state that shouldn't be present is not present.
STATE-ACCESS (state_identifier_d, 6, 0, 0, 0, 0)
JUMP (end)

:large_state

STATE-CREATE (2048, state_start, 0, 6, 0)
JUMP (end)

:verify_state

STATE-ACCESS (large_state_identifier, 6, 0, 0, 0, 0)
JUMP (end)

:end

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

at (512)

:state_start

byte (116, 101, 115, 116)

:order_data
; This data is used to generate the retention priority
; and state length of each state creation.

word (0, 1, 2, 3, 4, 3, 2, 1, 0)

:state_identifier_a

byte (142, 234, 75, 67, 167, 135)

:state_identifier_b

byte (249, 1, 14, 239, 86, 123)

:state_identifier_c

byte (35, 154, 52, 107, 21, 166)

:state_identifier_d

byte (180, 15, 192, 228, 77, 44)

:state_identifier_e

byte (212, 162, 33, 71, 230, 10)

:large_state_identifier

byte (239, 242, 188, 15, 182, 175)
