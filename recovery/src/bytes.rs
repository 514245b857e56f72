//! Little-endian byte strings of the state recovery hands over or saves
//! (the status log, checkpoint headers): one writer and one reader.

/// Appends the pieces in order.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    pub fn f64(&mut self, x: f64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }
    /// A length, then the bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }
}

/// Reads them back; every read past the end is `None`.
pub(crate) struct Reader<'a> {
    v: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(v: &'a [u8]) -> Reader<'a> {
        Reader { v, at: 0 }
    }
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let piece = self.v.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(piece)
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub fn f64(&mut self) -> Option<f64> {
        Some(f64::from_bits(self.u64()?))
    }
    /// [`Writer::bytes`]' piece.
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = usize::try_from(self.u64()?).ok()?;
        self.take(n)
    }
    pub fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
    /// Whether everything was read.
    pub fn done(&self) -> bool {
        self.at == self.v.len()
    }
}
