//! Buffers a thread keeps between calls ([`Kept`]): a check that needs a
//! scratch `Vec` for every layout or primitive of every file takes this
//! thread's, instead of allocating one and faulting its pages in each time.

use std::cell::Cell;
use std::thread::LocalKey;

/// A thread's slot for one kept buffer, declared with `thread_local!` as
/// `static NAME: Cell<Vec<T>> = const { Cell::new(Vec::new()) };` and
/// used only through [`Kept`].
pub type Slot<T> = LocalKey<Cell<Vec<T>>>;

/// A `Vec` taken, empty, from this thread's `slot`, and given back to it,
/// emptied, when dropped, unless its capacity has grown past `max`
/// elements: then it is freed, so a large input's buffer is not held after
/// its run (only small ones are worth keeping: their allocation and page
/// faults are what a run over many small files pays again and again).
///
/// A second `take` of the same slot while the first is alive gets a new,
/// empty `Vec` (the slot is empty); the one given back last is kept.
pub struct Kept<T: 'static> {
    vec: Vec<T>,
    slot: &'static Slot<T>,
    max: usize,
}

impl<T: 'static> Kept<T> {
    /// This thread's buffer from `slot`, empty; kept again on drop while
    /// its capacity is at most `max` elements.
    pub fn take(slot: &'static Slot<T>, max: usize) -> Self {
        // Empty: only a dropped `Kept` fills a slot, and it clears first.
        Self { vec: slot.take(), slot, max }
    }
}

impl<T: 'static> std::ops::Deref for Kept<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.vec
    }
}

impl<T: 'static> std::ops::DerefMut for Kept<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.vec
    }
}

impl<T: 'static> Drop for Kept<T> {
    fn drop(&mut self) {
        if self.vec.capacity() <= self.max {
            let mut vec = std::mem::take(&mut self.vec);
            vec.clear();
            // During the thread's own teardown the slot is gone; the buffer
            // is then simply freed.
            let _ = self.slot.try_with(|s| s.set(vec));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;
    use std::cell::Cell;

    thread_local! {
        static SLOT: Cell<Vec<u32>> = const { Cell::new(Vec::new()) };
    }

    #[test]
    fn a_small_buffer_comes_back_empty_and_a_large_one_is_freed() {
        let mut a = Kept::take(&SLOT, 100);
        a.extend(0..50);
        let (ptr, cap) = (a.as_ptr(), a.capacity());
        drop(a);
        // The same allocation, emptied.
        let b = Kept::take(&SLOT, 100);
        assert!(b.is_empty());
        assert_eq!((b.as_ptr(), b.capacity()), (ptr, cap));
        // A second take while the first is alive gets a fresh buffer.
        let c = Kept::take(&SLOT, 100);
        assert_eq!(c.capacity(), 0);
        drop(c);
        drop(b);
        assert_eq!(Kept::take(&SLOT, 100).capacity(), cap);
        // Grown past `max`: freed, so the slot holds nothing.
        let mut d = Kept::take(&SLOT, 100);
        d.extend(0..1000);
        assert!(d.capacity() > 100);
        drop(d);
        assert_eq!(Kept::take(&SLOT, 100).capacity(), 0);
    }
}
