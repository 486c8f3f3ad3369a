; RFC 4465 section 2.6, lines 606-658 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)

at (128)
                        ; Set up buffer between addresses 64 & 128
LOAD (32, 16384)
LOAD (byte_copy_left, 64)
LOAD (byte_copy_right, 128)

COPY (32, 128, 33)      ; Copy byte by byte starting to the left of
                        ; the buffer, into the buffer and wrapping
                        ; the buffer (inc overwriting the
                        ; boundaries)

LOAD (64, 16640)        ; Change the start of the buffer to be
                        ; beyond bytecode

COPY (64, 85, 65)       ; Copy to the left of the buffer,
                        ; overwriting this instruction

OUTPUT (32, 119)        ; Output 32 * 0x40 + 86 * 0x41 + 0x55,
                        ; which is 32 * '@' + 86 'A' + 'U'

                        ; Set a new small buffer
LOAD (byte_copy_left, 32)
LOAD (byte_copy_right, 48)

MEMSET (32, 4, 65, 1)   ; Set first 4 bytes of the buffer to be
                        ; 'ABCD'
COPY (32, 4, 48)        ; Copy from byte_copy_right (i.e., not
                        ; in buffer)

OUTPUT (48, 4)          ; Output 0x4142 4344, which is 'ABCD'

COPY (48, 4, 46)        ; Copy from two before byte_copy_right to
                        ; wrap around the buffer
OUTPUT (32, 2)          ; Output 0x4344, which is 'CD'

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
