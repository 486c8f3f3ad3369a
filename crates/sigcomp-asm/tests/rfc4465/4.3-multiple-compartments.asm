; RFC 4465 section 4.3, lines 2489-2629 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:type                           pad (1)
:type_lsb                       pad (1)

at (127)
:decompression_failure
at (128)

MULTILOAD (byte_copy_left, 2, state_start, state_end)
INPUT-BYTES (1, type_lsb, decompression_failure)
COMPARE ($type, 3, create_state, overwrite_state, temp)

:temp

COMPARE ($type, 5, overwrite_state, access_state, error_conditions)

:create_state
; starting byte identified by $type according to input:
; Input     0x00        0x01        0x02
; $type      512         513         514

ADD ($type, state_start)
STATE-CREATE (448, $type, 0, 6, 0)

; create state again, beginning in different place in buffer
; starting byte identified by $type according to input:
; Input     0x00        0x01        0x02

; $type      515         516         517

ADD ($type, 3)
STATE-CREATE (448, $type, 0, 6, 0)

; create a third time beginning in different place again
; starting byte identified by $type according to input:
; Input     0x00        0x01        0x02
; $type      516         517         515

SUBTRACT ($type, temp_one)
REMAINDER ($type, 3)
ADD ($type, temp_two)
STATE-CREATE (448, $type, 0, 6, 0)

:common_state

STATE-CREATE (448, temp_three, 0, 6, $type)
JUMP (end)

:overwrite_state

STATE-CREATE (1984, 32, 0, 6, 0)
JUMP (end)

:access_state

STATE-ACCESS (state_identifier_c, 6, 0, 0, 0, 0)
STATE-ACCESS (state_identifier_d, 6, 0, 0, 0, 0)
STATE-ACCESS (state_identifier_f, 6, 0, 0, 0, 0)
STATE-ACCESS (state_identifier_g, 6, 0, 0, 0, 0)

:end

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:error_conditions

COMPARE ($type, 7, access_a, access_b, access_e)

:access_a

STATE-ACCESS (state_identifier_a, 6, 0, 0, 0, 0)
JUMP (end)

:access_b

STATE-ACCESS (state_identifier_b, 6, 0, 0, 0, 0)
JUMP (end)

:access_e

STATE-ACCESS (state_identifier_e, 6, 0, 0, 0, 0)
JUMP (end)

at (512)

:state_start

byte (0, 1, 2, 3, 4, 5, 6)

:state_end

set (temp_one, (state_start + 2))   ; = 514
set (temp_two, (state_start + 3))   ; = 515
set (temp_three, (state_end - 1))   ; = 518

:state_identifier_a         ; start state at 512

byte (172, 166, 11, 142, 178, 131)

:state_identifier_b         ; start state at 513

byte (157, 191, 175, 198, 61, 210)

:state_identifier_c         ; start state at 514

byte (52, 197, 217, 29, 83, 97)

:state_identifier_d         ; start state at 515

byte (189, 214, 186, 42, 198, 90)

:state_identifier_e         ; start state at 516

byte (71, 194, 24, 20, 238, 7)

:state_identifier_f         ; start state at 517

byte (194, 117, 148, 29, 215, 161)

:state_identifier_g         ; start state at 518

byte (72, 135, 156, 141, 233, 14)
