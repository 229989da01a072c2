//! Sliding window of the last [`WINDOW`] durations (drain or reset times, in ms).

/// How many samples the moving averages keep (the original's `MovingAverage(10)`).
pub const WINDOW: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    buf: [i64; WINDOW],
    len: usize,
    /// Index of the oldest sample once the buffer is full.
    head: usize,
}

impl Window {
    /// A window holding the last `WINDOW` of `samples` (oldest first).
    pub fn from_samples(samples: &[i64]) -> Self {
        let mut w = Window::default();
        for &s in samples {
            w.push(s);
        }
        w
    }

    pub fn push(&mut self, sample: i64) {
        if self.len < WINDOW {
            self.buf[self.len] = sample;
            self.len += 1;
        } else {
            self.buf[self.head] = sample;
            self.head = (self.head + 1) % WINDOW;
        }
    }

    /// The samples, oldest first.
    pub fn samples(&self) -> Vec<i64> {
        (0..self.len)
            .map(|i| self.buf[(self.head + i) % WINDOW])
            .collect()
    }

    /// The exact mean (the original truncated it with integer division), 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.len == 0 {
            return 0.0;
        }
        // Summed as floats: extreme samples (a clock jump) must not overflow.
        let total: f64 = self.buf[..self.len].iter().map(|&s| s as f64).sum();
        total / self.len as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_ten_in_order() {
        let w = Window::from_samples(&(1..=13).collect::<Vec<_>>());
        assert_eq!(w.samples(), (4..=13).collect::<Vec<_>>());
        assert_eq!(w.mean(), 8.5);
    }

    #[test]
    fn mean_is_exact_not_truncated() {
        let w = Window::from_samples(&[1, 2]);
        assert_eq!(w.mean(), 1.5);
        assert_eq!(Window::default().mean(), 0.0);
    }
}
