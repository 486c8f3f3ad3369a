; RFC 4465 section 3.4, lines 1879-1896 of rfc4465.txt

:udvm_memory_size               pad (2)
:cycles_per_bit                 pad (2)
:sigcomp_version                pad (2)
:partial_state_id_length        pad (2)
:state_length                   pad (2)

at (128)

; udvm_memory_size for stream based transport = DMS / 2

MULTIPLY ($udvm_memory_size, 2)
OUTPUT (udvm_memory_size, 2)
OUTPUT (test_record_marking, 5)
END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:test_record_marking

byte (255, 255, 255, 255, 255)
