; RFC 4465 section 4.5, lines 2807-2881 of rfc4465.txt

at (30)
:save_area1
set (saved_instr1, (save_area1 + (code_start2 - start_saved))) ; = 33

at (80)
:save_area2
set (saved_instr2, (save_area2 + (code_start2 - start_saved))) ; = 83

at (128)
:code_start

COPY (start_saved, saved_len, save_area1)
                    ; copy 'ok2', OUTPUT (save_area2,3) END-MESSAGE
                    ; to position 30 and create as state
STATE-CREATE (saved_len, save_area1, saved_instr1, 6, 10)

set (modify1, (save_area1 + 5)) ; = 35
LOAD (modify1, 0x1e03)
                    ; modify save_area2 to be save_area1 in the
                    ; created state

COPY (start_saved, saved_len, save_area2)
STATE-CREATE (saved_len, save_area2, saved_instr2, 20, 10)
STATE-CREATE (saved_len, save_area2, saved_instr2, 12, 10)
                    ; copy 'ok2', OUTPUT (save_area2,3) END-MESSAGE
                    ; to position 80 and create as state twice with
                    ; min access len 20 and 12

JUMP (modify)

:ok1
byte (0x4f, 0x4b, 0x31)

set (after_output_minus1, (after_output - 1))

:modify
INPUT-BYTES (1, after_output_minus1, decompression_failure)
                    ; Input overwrites the next instruction
OUTPUT (ok1, 3)     ; Now is OUTPUT (ok1, 2) so output is 0x4f4b

:after_output

; Save from ok1 to the opcode of END-MESSAGE

set (modify_len, ((after_output + 1) - ok1)) ; = 13

END-MESSAGE (0, 0, modify_len, ok1, modify, 6, 10)
                    ; Save 'ok1', INPUT-BYTES, OUTPUT as state

set (saved_len, (end_saved - start_saved)) ; = 8

:start_saved
byte (0x4f, 0x4b, 0x32)

:code_start2

; Translated bytecode for OUTPUT (save_area2, 3)
byte (0x22, 0xa0, 0x50, 0x03)

; Translated bytecode for END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
; The zeros do not need to be sent because UDVM is initialised to 0
byte (0x23)

:end_saved
:decompression_failure
