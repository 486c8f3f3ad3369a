; RFC 4465 section 4.1, lines 2101-2179 of rfc4465.txt

at (64)

:type                           pad (1)
:type_lsb                       pad (1)

:requested_feedback_location    pad (1)
:requested_feedback_length      pad (1)
:requested_feedback_bytes       pad (127)

:returned_parameters_location   pad (2)
:length_of_partial_state_id_a   pad (1)
:partial_state_identifier_a     pad (6)
:length_of_partial_state_id_b   pad (1)
:partial_state_identifier_b     pad (12)
:length_of_partial_state_id_c   pad (1)
:partial_state_identifier_c     pad (20)
:terminate_returned_parameters  pad (1)

align (128)

set (q_bit, 1)
set (s_bit, 0)
set (i_bit, 0)
set (flags, (((4 * q_bit) + (2 * s_bit)) + i_bit))

INPUT-BYTES (1, type_lsb, decompression_failure)

COMPARE ($type, 1, short_feedback_item, long_feedback_item,
decompression_failure)

:short_feedback_item

set (requested_feedback_data, 127)
set (short_feedback_value, ((flags * 256) + requested_feedback_data))

LOAD (requested_feedback_location, short_feedback_value)
JUMP (return_sigcomp_parameters)

:long_feedback_item

set (requested_feedback_field, 255)
set (long_feedback_value, ((flags * 256) + requested_feedback_field))

LOAD (requested_feedback_location, long_feedback_value)
MEMSET (requested_feedback_bytes, 127, 1, 1)

:return_sigcomp_parameters

set (cpb, 0)
set (dms, 1)
set (sms, 0)
set (sigcomp_version, 1)

set (parameters_msb, (((64 * cpb) + (8 * dms)) + sms))
set (sigcomp_parameters, ((256 * parameters_msb) + sigcomp_version))

LOAD (returned_parameters_location, sigcomp_parameters)

LOAD (length_of_partial_state_id_a, 1536)   ; length 6 first byte 0
LOAD (length_of_partial_state_id_b, 3072)   ; length 12 first byte 0
LOAD (length_of_partial_state_id_c, 5120)   ; length 20 first byte 0
LOAD (terminate_returned_parameters, 5376)  ; length 21
                                            ; used to terminate the
                                            ; returned parameters
MEMSET (partial_state_identifier_a, 6, 0, 1)
MEMSET (partial_state_identifier_b, 12, 0, 1)
MEMSET (partial_state_identifier_c, 20, 0, 1)

END-MESSAGE (requested_feedback_location,
returned_parameters_location, 0, 0, 0, 0, 0)
:decompression_failure
DECOMPRESSION-FAILURE
