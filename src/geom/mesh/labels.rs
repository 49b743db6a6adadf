//! The shell of every triangle ([`ShellLabels`]), held in 2 bytes a
//! triangle when the mesh has fewer than 65,535 shells (almost every mesh),
//! else in 4: read back as the same `u32` labels either way.

/// Every triangle's shell, or [`ShellLabels::NONE`] for a collapsed one.
#[derive(Debug, Clone)]
pub enum ShellLabels {
    /// Fewer than `u16::MAX` shells; `u16::MAX` is none.
    Narrow(Vec<u16>),
    /// Any number of shells; `u32::MAX` is none.
    Wide(Vec<u32>),
}

impl Default for ShellLabels {
    fn default() -> Self {
        ShellLabels::Narrow(Vec::new())
    }
}

impl ShellLabels {
    /// The label of a triangle in no shell (a collapsed one).
    pub const NONE: u32 = u32::MAX;

    /// `labels` (with [`ShellLabels::NONE`]) for `count` shells, narrowed
    /// when `count` allows.
    pub fn new(labels: Vec<u32>, count: usize) -> ShellLabels {
        if count < u16::MAX as usize {
            ShellLabels::Narrow(labels.iter().map(|&s| if s == Self::NONE { u16::MAX } else { s as u16 }).collect())
        } else {
            ShellLabels::Wide(labels)
        }
    }

    /// Number of triangles labelled.
    pub fn len(&self) -> usize {
        match self {
            ShellLabels::Narrow(v) => v.len(),
            ShellLabels::Wide(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Triangle `t`'s shell, or [`ShellLabels::NONE`].
    #[inline]
    pub fn get(&self, t: usize) -> u32 {
        match self {
            ShellLabels::Narrow(v) => match v[t] {
                u16::MAX => Self::NONE,
                s => u32::from(s),
            },
            ShellLabels::Wide(v) => v[t],
        }
    }

    /// Every triangle's label, in order.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len()).map(|t| self.get(t))
    }

    /// Bytes a triangle takes (2 narrow, 4 wide).
    pub fn bytes_per_triangle(&self) -> usize {
        match self {
            ShellLabels::Narrow(_) => 2,
            ShellLabels::Wide(_) => 4,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_come_back_as_given_narrow_or_wide() {
        let none = ShellLabels::NONE;
        for count in [3usize, 65_534, 65_535, 70_000] {
            let top = count as u32 - 1;
            let labels = vec![0, none, top, 1, none];
            let l = ShellLabels::new(labels.clone(), count);
            assert_eq!(l.bytes_per_triangle(), if count < 65_535 { 2 } else { 4 }, "{count}");
            assert_eq!(l.iter().collect::<Vec<_>>(), labels, "{count}");
            assert_eq!(l.len(), 5);
            assert_eq!(l.get(2), top);
        }
    }
}
