; RFC 4465 section 3.1, lines 1594-1696 of rfc4465.txt

:udvm_memory_size               pad (2)
:cycles_per_bit                 pad (2)
:sigcomp_version                pad (2)
:partial_state_id_length        pad (2)
:state_length                   pad (2)

at (64)

:byte_copy_left                 pad (2)
:byte_copy_right                pad (2)
:remaining_cycles               pad (2)
:check_memory                   pad (1)
:check_memory_lsb               pad (1)
:check_cycles                   pad (1)
:check_cycles_lsb               pad (1)

at (127)
:decompression_failure
at (128)
                            ; Set up a 1-byte buffer
LOAD (byte_copy_left, 32)
LOAD (byte_copy_right, 33)

:test_version

; Input a byte containing the version of SigComp being run
INPUT-BYTES (1, check_memory_lsb, decompression_failure)
COMPARE ($sigcomp_version, $check_memory, decompression_failure,
test_state_access, decompression_failure)

:test_state_access

COMPARE ($partial_state_id_length, 0, decompression_failure,
test_length_equals_zero, test_state_length)

:test_length_equals_zero
                            ; No state was accessed so state_length
                            ; should be zero (first message)
COMPARE ($state_length, 0, decompression_failure, end,
decompression_failure)

:test_state_length
                            ; State was accessed so state_length
                            ; should be 960
COMPARE ($state_length, 960, decompression_failure, test_udvm_memory,
decompression_failure)

:test_udvm_memory
                            ; Copy one byte to
                            ; udvm_memory_size + input - 1
                            ; Succeed when input byte is 0x00
                            ; Fail when input byte is 0x01

INPUT-BYTES (1, check_memory_lsb, decompression_failure)
ADD ($check_memory, $udvm_memory_size)
SUBTRACT ($check_memory, 1)
COPY (32, 1, $check_memory)

:test_udvm_cycles

INPUT-BYTES (1, check_cycles_lsb, decompression_failure)

; Work out the total number of cycles available to the UDVM
; total_UDVM_cycles = cycles_per_bit * (8 * message_size + 1000)
;
;       = cycles_per_bit * (8 * (partial_state_id_length + 3) + 1000)

LOAD (remaining_cycles, $partial_state_id_length)
ADD ($remaining_cycles, 3)
MULTIPLY ($remaining_cycles, 8)
ADD ($remaining_cycles, 1000)

MULTIPLY ($remaining_cycles, $cycles_per_bit)

ADD ($remaining_cycles, $check_cycles)

set (cycles_used_by_bytecode, 856)

SUBTRACT ($remaining_cycles, cycles_used_by_bytecode)
COPY (32, $remaining_cycles, 32)
                ; Copy to use up all cycles available + input byte
                ; Succeeds when input byte = 0x00
                ; Fail when input byte = 0x01

:end
                            ; Create 960 bytes of state for future
                            ; reference
END-MESSAGE (0, 0, 960, 64, 128, 6, 0)
