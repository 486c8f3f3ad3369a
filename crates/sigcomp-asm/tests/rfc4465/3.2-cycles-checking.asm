; RFC 4465 section 3.2, lines 1743-1762 of rfc4465.txt

at (64)
:byte_copy_left           pad (2)
:byte_copy_right          pad (2)
:value                    pad (2)
:copy_next                pad (2)

at(128)
MULTILOAD (byte_copy_left, 4, 32, 41, 0, 34)
                                ; Set up a 10-byte buffer

                                ; Set the value to copy
                                ; Copy it 100 times,
                                ; output the value,
                                ; increment the counter
:loop
COPY (value, 2, $byte_copy_left)
COPY-OFFSET (2, 100, $copy_next)
OUTPUT (value, 2)
ADD ($value, 1)
JUMP (loop)
