//! UDVM memory: bounds-checked bytes and words, and the circular buffer
//! that byte copying wraps around (RFC 3320 §8.4, RFC 4896 §4).

use super::*;

impl Machine<'_> {
    #[inline(always)]
    pub(super) fn byte(&self, a: u16) -> Res<u8> {
        match self.mem.get(usize::from(a)) {
            Some(&b) => Ok(b),
            None => fail(Reason::Segfault),
        }
    }

    #[inline(always)]
    pub(super) fn set_byte(&mut self, a: u16, v: u8) -> Res<()> {
        let i = usize::from(a);
        match self.mem.get_mut(i) {
            Some(b) => *b = v,
            None => return fail(Reason::Segfault),
        }
        self.wrote(i, 1);
        Ok(())
    }

    /// memory[a]: MSB at a, LSB at a + 1 (mod 2^16).
    #[inline(always)]
    pub(super) fn word(&self, a: u16) -> Res<u16> {
        let i = usize::from(a);
        match self.mem.get(i..i + 2) {
            Some(&[hi, lo]) => Ok(u16::from_be_bytes([hi, lo])),
            _ => self.word_at_edge(a),
        }
    }

    /// A word at the end of memory: its LSB is at address 0 when memory
    /// is 65536 bytes, else outside memory.
    #[cold]
    pub(super) fn word_at_edge(&self, a: u16) -> Res<u16> {
        Ok(u16::from_be_bytes([self.byte(a)?, self.byte(a.wrapping_add(1))?]))
    }

    #[inline(always)]
    pub(super) fn set_word(&mut self, a: u16, v: u16) -> Res<()> {
        let i = usize::from(a);
        match self.mem.get_mut(i..i + 2) {
            Some(w) => w.copy_from_slice(&v.to_be_bytes()),
            None => return self.set_word_at_edge(a, v),
        }
        self.wrote(i, 2);
        Ok(())
    }

    #[cold]
    pub(super) fn set_word_at_edge(&mut self, a: u16, v: u16) -> Res<()> {
        let [hi, lo] = v.to_be_bytes();
        self.set_byte(a, hi)?;
        self.set_byte(a.wrapping_add(1), lo)
    }

    /// Notes a write to memory [a, a + n): the cached instructions go if
    /// it reaches one of them.
    #[inline(always)]
    pub(super) fn wrote(&mut self, a: usize, n: usize) {
        if a < self.code_lo + self.code_len && self.code_lo < a + n {
            self.drop_cached_code();
        }
    }

    #[cold]
    pub(super) fn drop_cached_code(&mut self) {
        for e in &mut self.huffman {
            e.len = 0;
        }
        next_epoch(&mut self.epoch, &mut self.decoded[..]);
        *self.cache_epoch = self.epoch;
        if self.key_epoch != 0 {
            self.key_epoch = self.epoch;
        }
        self.code_lo = 0;
        self.code_len = 0;
    }

    #[inline(always)]
    pub(super) fn bounds(&self) -> Res<(u16, u16)> {
        // Both words lie in memory exactly when its byte 67 does; reading
        // them with one bounds check fails as reading each in turn does.
        let at = usize::from(BYTE_COPY_LEFT);
        match self.mem.get(at..at + 4) {
            Some(&[l0, l1, r0, r1]) => Ok((u16::from_be_bytes([l0, l1]), u16::from_be_bytes([r0, r1]))),
            _ => fail(Reason::Segfault),
        }
    }

    /// Fills `out` from `start` under byte copying rules.
    pub(super) fn read_bytes(&self, start: u16, bcl: u16, bcr: u16, out: &mut [u8]) -> Res<()> {
        let (s, n) = (usize::from(start), out.len());
        if s + n <= self.mem.len() && !(s < usize::from(bcr) && usize::from(bcr) < s + n) {
            out.copy_from_slice(&self.mem[s..s + n]);
            return Ok(());
        }
        let mut a = start;
        for b in out {
            *b = self.byte(a)?;
            a = next(a, bcl, bcr);
        }
        Ok(())
    }

    /// Writes `data` starting at `start` under byte copying rules; returns
    /// the address the next byte would go to.
    pub(super) fn write_string(&mut self, start: u16, data: &[u8], bcl: u16, bcr: u16) -> Res<u16> {
        let (s, n) = (usize::from(start), data.len());
        if s + n < self.mem.len().min(65536) && !(s < usize::from(bcr) && usize::from(bcr) <= s + n) {
            self.mem[s..s + n].copy_from_slice(data);
            self.wrote(s, n);
            return Ok((s + n) as u16);
        }
        self.write_string_wrapping(start, data, bcl, bcr)
    }

    /// [`Machine::write_string`] across bcr or the end of the address
    /// space: each run up to either is copied whole (a SHA-1 digest
    /// written across the buffer's end is 2 runs, not 20 bytes one by one).
    #[inline(never)]
    pub(super) fn write_string_wrapping(&mut self, start: u16, mut data: &[u8], bcl: u16, bcr: u16) -> Res<u16> {
        let mut a = start;
        while !data.is_empty() {
            let at = usize::from(a);
            // Addresses at..=last follow one another (RFC 3320 §8.4: the
            // byte after bcr − 1 is bcl; after 65535, 0).
            let room = if a < bcr { usize::from(bcr) - at } else { 65536 - at };
            let n = room.min(data.len());
            let Some(run) = self.mem.get_mut(at..at + n) else {
                // Partly outside memory: byte by byte, up to the fault.
                for &b in data {
                    self.set_byte(a, b)?;
                    a = next(a, bcl, bcr);
                }
                return Ok(a);
            };
            run.copy_from_slice(&data[..n]);
            self.wrote(at, n);
            data = &data[n..];
            let last = (at + n - 1) as u16;
            a = next(last, bcl, bcr);
        }
        Ok(a)
    }

    /// Copies `len` bytes from `src` to `dst` one byte at a time, so a copy
    /// may read bytes it has just written (RFC 3320 §8.4). Returns the next
    /// destination address.
    #[inline(always)]
    pub(super) fn copy(&mut self, src: u16, len: u16, dst: u16, bcl: u16, bcr: u16) -> Res<u16> {
        let (s, d) = (usize::from(src), usize::from(dst));
        // One byte (a literal): read at src, written at dst whatever the
        // bounds, and the next destination steps past dst.
        if len == 1 && s < self.mem.len() && d < self.mem.len() {
            self.mem[d] = self.mem[s];
            self.wrote(d, 1);
            return Ok(next(dst, bcl, bcr));
        }
        self.copy_run(src, len, dst, bcl, bcr)
    }

    pub(super) fn copy_run(&mut self, mut src: u16, len: u16, mut dst: u16, bcl: u16, bcr: u16) -> Res<u16> {
        let (s, d, n, r) = (usize::from(src), usize::from(dst), usize::from(len), usize::from(bcr));
        let mem_len = self.mem.len();
        // Fast path: both runs in memory and neither crosses bcr.
        if s + n <= mem_len && d + n < mem_len.min(65536) && !(s < r && r < s + n) && !(d < r && r <= d + n) {
            if s >= d || s + n <= d {
                self.mem.copy_within(s..s + n, d);
            } else {
                // The source runs into the destination ahead of it: byte by
                // byte repeats its first d − s bytes, as copies of that
                // many bytes at a time do.
                let step = d - s;
                let mut done = 0;
                while done < n {
                    let k = step.min(n - done);
                    self.mem.copy_within(s + done..s + done + k, d + done);
                    done += k;
                }
            }
            self.wrote(d, n);
            return Ok((d + n) as u16);
        }
        for _ in 0..len {
            let b = self.byte(src)?;
            self.set_byte(dst, b)?;
            src = next(src, bcl, bcr);
            dst = next(dst, bcl, bcr);
        }
        Ok(dst)
    }
}
