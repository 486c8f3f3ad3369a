; RFC 4465 section 2.14, lines 1209-1267 of rfc4465.txt

at (64)

:next_address                   pad (2)
:counter                        pad (1)
:counter_lsb                    pad (1)
:switch_counter                 pad (2)

at (128)

LOAD (switch_counter, 4)

:address_a

LOAD (next_address, address_c)
SUBTRACT ($next_address, address_b)     ; address_c - address_b
OUTPUT (counter_lsb, 1)

:address_b

JUMP ($next_address)                    ; Jump to address_c

:address_c

ADD ($counter, 1)
LOAD (next_address, address_a)
SUBTRACT ($next_address, address_d)     ; address_a - address_d
OUTPUT (counter_lsb, 1)

:address_d

COMPARE ($counter, 6, $next_address, address_c, address_e)
                                ; counter < 6, $next_address gives
                                ; jump to address_a

:address_e

SUBTRACT ($switch_counter, 1)           ; switch_counter = 3
LOAD (next_address, address_a)
SUBTRACT ($next_address, address_f)     ; address_a - address_f
OUTPUT (counter_lsb, 1)

:address_f

SWITCH (4, $switch_counter, address_g, $next_address, address_c,
address_e)
                                ; when $switch_counter = 1,
                                ; $next_address gives jump to
                                ; address_a

:address_g

END-MESSAGE (0, 0, 0, 0, 0, 0, 0)
