; RFC 4465 section 2.8, lines 766-804 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)

at (128)

LOAD (byte_copy_left, 128)  ; sets up a circular buffer
LOAD (byte_copy_right, 129) ; of 1 byte between 0x0080 and 0x0081

MEMSET (64, 129, 0, 1)  ; fills up the memory in the range
                     ; 0x0040-0x007f with 0x00, ... 0x3f;
                     ; then it writes successively at
                     ; 0x0080 the following values 0x40, ... 0x80
                     ; as a side effect, the values of
                     ; bcl and bcr are modified.

                     ; before and during the MEMSET:
                     ; byte_copy_left: 0x0080 byte_copy_right: 0x0081
                     ; after the MEMSET:
                     ; byte_copy_left: 0x0001 byte_copy_right: 0x0203

MEMSET (129, 15, 64, 15)     ; fills the memory range 0x0080-0x008f
                      ; with values 0x40, 0x4f, ... 0xf4, 0x03, 0x12.
                      ; as a side effect, it overwrites a
                      ; part of the code including itself

OUTPUT (128, 16)      ; outputs 0x8040 4f5e 6d7c 8b9a
                      ; a9b8 c7d6 e5f4 0312

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
