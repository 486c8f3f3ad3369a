; RFC 4465 section 2.5, lines 492-536 of rfc4465.txt

at (64)

:start                          pad (1)
:start_lsb                      pad (1)

at (128)

set (location_a, 128)
set (location_b, 132)

LOAD (128, 132)                 ; address 128 contains 132 = 0x0084
LOAD (130, $location_a)         ; address 130 contains 132 = 0x0084
LOAD ($location_a, 134)         ; address 132 contains 134 = 0x0086
LOAD ($location_b, $location_b) ; address 134 contains 134 = 0x0086
OUTPUT (128, 8)                 ; output 0x0084 0084 0086 0086

INPUT-BYTES (1, start_lsb, decompression_failure)
MULTIPLY ($start, 2)
ADD ($start, 60)
MULTILOAD ($start, 3, overlap_start, overlap_end, 128)

:position

set (overlap_start, (position - 7))

MULTILOAD ($start, 4, 42, 128, $location_a, $location_b)

:end

set (overlap_end, (end - 1))

OUTPUT (128, 8)
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:decompression_failure
DECOMPRESSION-FAILURE
