; RFC 4465 section 4.4, lines 2735-2765 of rfc4465.txt

at (32)

:input      pad (1)
:input2     pad (1)
:input3     pad (1)

at (128)

STATE-ACCESS (sip_dictionary, 20, 0xcfe, 1, input, 0)
STATE-ACCESS (sip_dictionary, 6, 0xcff, 1, input2, 0)
STATE-ACCESS (sip_dictionary, 12, 0xd00, 1, input3, 0)

OUTPUT (input, 3)

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)

:sip_dictionary
byte (0xfb, 0xe5, 0x07, 0xdf, 0xe5, 0xe6)
byte (0xaa, 0x5a, 0xf2, 0xab, 0xb9, 0x14)
byte (0xce, 0xaa, 0x05, 0xf9, 0x9c, 0xe6)
byte (0x1b, 0xa5)
