; RFC 4465 section 2.16, lines 1485-1547 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:type                           pad (1)
:type_lsb                       pad (1)
:state_value                    pad (4)

at (127)
:decompression_failure
at (128)

INPUT-BYTES (1, type_lsb, decompression_failure)
COMPARE ($type, 1, execute_state, extract_state, error_conditions)

:execute_state

STATE-ACCESS (state_identifier, 20, 0, 0, 0, 512)

:extract_state

STATE-ACCESS (state_identifier, 20, 12, 4, state_value, 0)
OUTPUT (state_value, 4)
JUMP (end)

:error_conditions

COMPARE ($type, 3, state_not_found, id_too_short, state_too_short)

:state_not_found

STATE-ACCESS (128, 20, 0, 0, 0, 0)
JUMP (end)

:id_too_short

STATE-ACCESS (state_identifier, 19, 6, 4, state_value, 0)
JUMP (end)

:state_too_short

STATE-ACCESS (state_identifier, 20, 12, 5, state_value, 0)
JUMP (end)

at (484)

:end

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

at (512)

:state_identifier

byte (0x5d, 0xf8, 0xbc, 0x3e, 0x20, 0x93, 0xb5, 0xab, 0xe1, 0xf1,
0x70, 0x13, 0x42, 0x4c, 0xe7, 0xfe, 0x05, 0xe0, 0x69, 0x39)
