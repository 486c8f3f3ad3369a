; RFC 4465 section 2.2, lines 293-353 of rfc4465.txt

at (64)

:a                              pad (2)
:b                              pad (2)
:type                           pad (1)
:type_lsb                       pad (1)

at (128)

INPUT-BYTES (1, type_lsb, decomp_failure)
SUBTRACT ($type, 1)
JUMP (start)
:decomp_failure
DECOMPRESSION-FAILURE

; Now the value in $type should be 0xffff, 0x0000, or 0x0001
; according to whether the input was 0x00, 0x01, or 0x02.

at (255)

:start

; The multitypes are values
                        ; For all three messages
                        ; $start = 1728 (first 2 bytes of ADD instr)
ADD ($start, 63809)     ; 1728 + 63809 = 1 = 0x0001
SUBTRACT ($a, 1)        ; 0 - 1 = 65535 = 0xffff
MULTIPLY ($a, 1001)     ; 65535 * 1001 = 64535 = 0xfc17
DIVIDE ($a, 101)        ; 64535 / 101 = 638 = 0x027e
REMAINDER ($a, 11)      ; 638 % 11 = 0 = 0x0000

OUTPUT (64, 4)          ; output 0x0000 0000

; The multitypes are references
ADD ($b, $start)        ; 0 + 1 = 1 = 0x0001
                        ; If the message is 0x00
SUBTRACT ($b, $type)    ; 1 - 65535 = 2 = 0x0002
MULTIPLY ($b, $b)       ; 2 * 2 = 4 = 0x0004
DIVIDE ($a, $b)         ; 0 / 4 = 0 = 0x0000
REMAINDER ($b, $type)   ; 4 % 65535 = 4 = 0x0004

OUTPUT (64, 4)          ; output 0x0000 0004

                        ; If the message is 0x01, $type = 0
                        ; so decompression failure occurs at
                        ; REMAINDER ($b, $type)

                        ; If the message is 0x02, $type = 1 so
                        ; $b becomes 0 and decompression failure
                        ; occurs at DIVIDE ($a, $b)

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
