; RFC 4465 section 2.1, lines 231-264 of rfc4465.txt

at (64)

:a                              pad (2)
:b                              pad (2)

at (128)

JUMP (start)            ; Jump to address 255

at (255)

:start

; The multitypes are values
                        ; $start = 448 (first 2 bytes of AND instr)
AND ($start, 21845)     ; 448 & 21845 = 320 = 0x0140
OR ($a, 42)             ; 0 | 42 = 42 = 0x002a
NOT ($b)                ; ~0 = 65535 = 0xffff
LSHIFT ($a, 3)          ; 42 << 3 = 336 = 0x0150
RSHIFT ($b, 65535)      ; 65535 >> 65535 = 0 = 0x0000

OUTPUT (64, 4)          ; Output 0x0150 0000

; The multitypes are references

AND ($a, $start)        ; 336 & 320 = 320 = 0x0140
OR ($a, $a)             ; 320 | 320 = 320 = 0x0140
NOT ($a)                ; ~320 = 65215 = 0xfebf
LSHIFT ($b, $a)         ; 0 << 65215 = 0 = 0x0000
RSHIFT ($a, $b)         ; 65215 >> 0 = 65215 = 0xfebf

OUTPUT (64, 4)          ; Output 0xfebf 0000

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
