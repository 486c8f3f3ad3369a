; RFC 4465 section 2.13, lines 1127-1195 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:input_bit_order                pad (2)
:stack_location                 pad (2)
:next_address                   pad (2)

at (128)

LOAD (stack_location, 64)
PUSH (2)
PUSH ($64)
PUSH (66)               ; Stack now contains 2, 1, 66
                        ; so $stack_location = 66

OUTPUT (64, 8)          ; Output 0x0003 0002 0001 0042

POP (64)                ; Pop value 66 from address 70 to address 64
POP ($stack_location)   ; Pop value 1 from address 68 to address 66
                        ; so stack_fill is overwritten to be 1
POP (stack_location)    ; Pop value 1 from address 68 to address 70

OUTPUT (64, 8)          ; Output 0x0042 0000 0001 0001
JUMP (address_a)

at (192)

:address_a

LOAD (stack_location, 32)
LOAD (next_address, address_c)
SUBTRACT ($next_address, address_b)  ; next_address = 64
CALL (address_b)                     ; push 204 on stack

at (256)

:address_b

CALL ($next_address)                 ; push 256 on stack

at (320)

:address_c

LOAD (stack_location, 383)
LOAD (383, 26)                   ; overwrite $stack_location with 26
MULTILOAD (432, 3, 1, 49153, 32768)

                                 ; write bytes so that 433 and 434
                                 ; contain 0x01c0 = 448 and
                                 ; 435 and 436 contain 0x0180 = 384

RETURN                           ; pop 383 from the stack and jump
                                 ; there = 384, which is lsb of
                                 ; stack_fill, which now contains 25,
                                 ; which is UDVM instruction RETURN
                                 ; pop 448 from the stack and jump
                                 ; there
at (448)

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
