; RFC 4465 section 2.4, lines 410-468 of rfc4465.txt

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:hash_value                     pad (20)

at (128)

SHA-1 (test_one, 3, hash_value)
OUTPUT (hash_value, 20)

SHA-1 (test_two, 56, hash_value)
OUTPUT (hash_value, 20)

; Set up a 1-byte buffer
LOAD (byte_copy_left, test_three)
LOAD (byte_copy_right, test_four)

; Perform SHA-1 over 16384 bytes in a 1-byte buffer
SHA-1 (test_three, 16384, hash_value)
OUTPUT (hash_value, 20)

; Set up an 8-byte buffer
LOAD (byte_copy_left, test_four)
LOAD (byte_copy_right, test_end)

; Perform SHA-1 over 640 bytes in an 8-byte buffer
SHA-1 (test_four, 640, test_four)
OUTPUT (test_four, 20)

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:test_one

byte (97, 98, 99)

:test_two

byte (97, 98, 99, 100, 98, 99, 100, 101, 99, 100, 101, 102, 100, 101,
102, 103, 101, 102, 103, 104, 102, 103, 104, 105, 103, 104, 105, 106,
104, 105, 106, 107, 105, 106, 107, 108, 106, 107, 108, 109, 107, 108,
109, 110, 108, 109, 110, 111, 109, 110, 111, 112, 110, 111, 112, 113)

:test_three

byte (97)

:test_four

byte (48, 49, 50, 51, 52, 53, 54, 55)

:test_end
