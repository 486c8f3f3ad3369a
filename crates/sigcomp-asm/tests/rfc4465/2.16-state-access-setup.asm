; RFC 4465 section 2.16, lines 1463-1481 of rfc4465.txt

at (128)

END-MESSAGE (0, 0, state_length, state_start, 0, 20, 0)

; The bytes between state_start and state_end are derived from
; translation of the following mnemonic code:
;
; at (512)
; OUTPUT (data, 4)
; END-MESSAGE (0,0,0,0,0,0,0)
; :data
; byte (116, 101, 115, 116)

at (512)
:state_start
byte (34, 162, 12,4, 35, 0, 0, 0, 0, 0, 0, 0, 116, 101, 115, 116)
:state_end

set (state_length, (state_end - state_start))
