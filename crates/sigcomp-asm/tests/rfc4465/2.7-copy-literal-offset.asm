; RFC 4465 section 2.7, lines 686-749 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:destination                    pad (2)
:offset                         pad (2)

at (128)
                                ; Set up circular buffer, source, and
                                ; destination
LOAD (32, 16640)
LOAD (byte_copy_left, 64)
LOAD (byte_copy_right, 128)
LOAD (destination, 33)

COPY-LITERAL (32, 128, $destination)    ; Copy from the left of the
                        ; buffer overwriting bcl, bcr, and
                        ; destination wrapping around the buffer
OUTPUT (64, 8)          ; Check destination has been updated
                        ; Output 0x4141 4141 0061 4141

LOAD (destination, copy)

:copy                   ; Overwrite the copy instruction
COPY-LITERAL (32, 2, $destination)
OUTPUT (copy, 2)        ; Output 0x4141

LOAD (byte_copy_left, 72)       ; Set up new circular buffer
LOAD (byte_copy_right, 82)
LOAD (destination, 82)          ; Set destination to byte_copy_right

MEMSET (72, 10, 65, 1)          ; Fill the buffer with 0x41 - 4A

COPY-OFFSET (2, 6, $destination)    ; Copy from within circular
                                    ; buffer to outside buffer

LOAD (offset, 6)
COPY-OFFSET ($offset, 4, $destination)
                                ; Copy from byte_copy_right
                                ; so reading outside buffer

OUTPUT ($byte_copy_right, 10)   ; Output 0x494A 4142 4344 494A 4142,
                                ; which is 'IJABCDIJAB'
LOAD (destination, 80)              ; Put destination within the
                                    ; buffer
COPY-OFFSET (4, 4, $destination)    ; Copy where destination wraps
OUTPUT (destination, 2)             ; Output 0x004A

COPY-OFFSET (5, 4, $destination)    ; Copy where offset wraps from
                                    ; left back around to the right
OUTPUT (destination, 2)             ; Output 0x004E
OUTPUT ($byte_copy_left, 10)        ; Output the circular buffer
                                    ; 0x4748 4845 4647 4748 4546,
                                    ; which is 'GHHEFGGHEF'

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
