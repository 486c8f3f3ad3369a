; RFC 4465 section 2.15, lines 1305-1384 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:states                         pad (1)
:states_lsb                     pad (1)
:min_len                        pad (1)
:min_len_lsb                    pad (1)

:state_identifier       pad (20)

set (state_length, 10)

at (127)
:decompression_failure
at (128)

INPUT-BYTES (1, states_lsb, decompression_failure)

:test_one
LSHIFT ($states, 11)
COMPARE ($states, 32768, test_two, create_state_a2, create_state_a2)

:create_state_a2
STATE-CREATE (state_length, state_address2, 0, 20, 0)

:test_two
LSHIFT ($states, 1)
COMPARE ($states, 32768, test_three, create_state_a, create_state_a)

:create_state_a
STATE-CREATE (state_length, state_address, 0, 20, 0)

:test_three
LSHIFT ($states, 1)
COMPARE ($states, 32768, test_four, free_state, free_state)

:free_state
INPUT-BYTES (1, min_len_lsb, decompression_failure)
STATE-FREE (state_identifier, $min_len)
COPY (identifier1, $min_len, state_identifier)

:test_four

LSHIFT ($states, 1)
COMPARE ($states, 32768, test_five, free_state2, free_state2)

:free_state2
STATE-FREE (identifier1, 6)

:test_five
LSHIFT ($states, 1)
COMPARE ($states, 32768, end, create_state_b, create_state_b)

:create_state_b
END-MESSAGE (0, 0, state_length, state_address, 0, 20, 0)

:end
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:identifier1
byte (67, 122, 232, 10, 15, 220, 30, 106, 135, 193, 182, 42, 118,
118, 185, 115, 49, 140, 14, 245)

at (256)
:state_address
byte (192, 204, 63, 238, 121, 188, 252, 143, 209, 8)

:state_address2
byte (101, 232, 3, 82, 238, 41, 119, 23, 223, 87)
