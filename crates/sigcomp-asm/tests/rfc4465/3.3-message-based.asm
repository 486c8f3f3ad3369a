; RFC 4465 section 3.3, lines 1799-1820 of rfc4465.txt

:udvm_memory_size               pad (2)
:cycles_per_bit                 pad (2)
:sigcomp_version                pad (2)
:partial_state_id_length        pad (2)
:state_length                   pad (2)

at (128)

:code_start

; udvm_memory_size for message-based transport
;    = DMS - total_message_size

ADD ($udvm_memory_size, total_message_size)
OUTPUT (udvm_memory_size, 2)
END-MESSAGE (0, 0, 0, 0, 0, 0, 1)

:code_end

set (header_size, 3)
set (code_size, (code_end - code_start))
set (total_message_size, (header_size + code_size))
