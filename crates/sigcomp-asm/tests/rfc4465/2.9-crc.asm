; RFC 4465 section 2.9, lines 815-860 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:crc_value                      pad (2)
:crc_string_a                   pad (24)
:crc_string_b                   pad (20)

at (128)

MEMSET (crc_string_a, 24, 1, 1)  ; sets up between 0x0046 and 0x005d
                                 ; a byte string containing 0x01,
                                 ; 0x02, ... 0x18

MEMSET (crc_string_b, 20, 128, 1) ; sets up between 0x005e and 0x0071
                                  ; a byte string containing 0x80,
                                  ; 0x81, ... 0x93

INPUT-BYTES (2, crc_value, decompression_failure)
                                 ; reads in 2 bytes representing
                                 ; the CRC value of the byte string
                                 ; of 44 bytes starting at 0x0046

CRC ($crc_value, crc_string_a, 44, decompression_failure)
                                   ; computes the CRC value of the
                                   ; byte string crc_string_a
                                   ; concatenated with byte string
                                   ; crc_string_b (with a total
                                   ; length of 44 bytes).
                                   ; if the computed value does
                                   ; not match the 2-byte value read
                                   ; previously, the program ends
                                   ; with DECOMPRESSION-FAILURE.
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:decompression_failure
DECOMPRESSION-FAILURE
