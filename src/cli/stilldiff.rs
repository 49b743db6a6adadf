//! How different two stills of one view are (`compare --mode full`): the
//! mean absolute difference and the structural similarity (SSIM).
//!
//! - **Mean absolute difference** (the score): the mean over every pixel and
//!   the R, G and B channels of |old − new|, as a percentage of 255. 0% is
//!   identical; a model that moved or changed colour over a tenth of the
//!   frame scores a few percent.
//! - **SSIM** (shown beside it): Wang et al.'s structural similarity of the
//!   two images' luma (Rec. 601: 0.299 R + 0.587 G + 0.114 B), computed on
//!   8×8 windows stepped by 4 pixels with C1 = (0.01·255)² and
//!   C2 = (0.03·255)², averaged over the windows. 1 is identical.
//!
//! Both are computed on the stills as drawn (1024 px in full mode, the
//! background included); when the sizes differ, NEW is resized to OLD's
//! size first (bilinear).

use image::RgbaImage;

/// The difference of two stills.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// Mean absolute difference over R, G and B, % of 255.
    pub mad_pct: f64,
    /// Mean SSIM of the luma on 8×8 windows (1 is identical).
    pub ssim: f64,
}

/// Compares `old` with `new` (resized to `old`'s size when they differ).
pub fn difference(old: &RgbaImage, new: &RgbaImage) -> Difference {
    let resized;
    let new = if new.dimensions() == old.dimensions() {
        new
    } else {
        resized = image::imageops::resize(new, old.width(), old.height(), image::imageops::FilterType::Triangle);
        &resized
    };
    Difference { mad_pct: mean_absolute_difference(old, new), ssim: ssim(old, new) }
}

fn mean_absolute_difference(a: &RgbaImage, b: &RgbaImage) -> f64 {
    let mut sum = 0u64;
    for (p, q) in a.pixels().zip(b.pixels()) {
        for c in 0..3 {
            sum += p.0[c].abs_diff(q.0[c]) as u64;
        }
    }
    let n = (a.width() as u64 * a.height() as u64 * 3).max(1);
    sum as f64 / n as f64 / 255.0 * 100.0
}

fn luma(img: &RgbaImage) -> Vec<f64> {
    img.pixels().map(|p| 0.299 * p.0[0] as f64 + 0.587 * p.0[1] as f64 + 0.114 * p.0[2] as f64).collect()
}

/// Window size and step of the SSIM.
const WINDOW: u32 = 8;
const STEP: u32 = 4;

fn ssim(a: &RgbaImage, b: &RgbaImage) -> f64 {
    let (w, h) = a.dimensions();
    let (ya, yb) = (luma(a), luma(b));
    let c1 = (0.01f64 * 255.0).powi(2);
    let c2 = (0.03f64 * 255.0).powi(2);
    let win = WINDOW.min(w).min(h).max(1);
    let n = (win * win) as f64;
    let (mut total, mut count) = (0.0, 0u64);
    let mut y0 = 0;
    while y0 + win <= h {
        let mut x0 = 0;
        while x0 + win <= w {
            let (mut sa, mut sb, mut saa, mut sbb, mut sab) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for y in y0..y0 + win {
                let row = (y * w) as usize;
                for x in x0..x0 + win {
                    let (p, q) = (ya[row + x as usize], yb[row + x as usize]);
                    sa += p;
                    sb += q;
                    saa += p * p;
                    sbb += q * q;
                    sab += p * q;
                }
            }
            let (ma, mb) = (sa / n, sb / n);
            let va = (saa / n - ma * ma).max(0.0);
            let vb = (sbb / n - mb * mb).max(0.0);
            let cov = sab / n - ma * mb;
            total += ((2.0 * ma * mb + c1) * (2.0 * cov + c2)) / ((ma * ma + mb * mb + c1) * (va + vb + c2));
            count += 1;
            x0 += STEP;
        }
        y0 += STEP;
    }
    if count == 0 { 1.0 } else { total / count as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgba;

    fn square(size: u32, at: u32, colour: [u8; 4]) -> RgbaImage {
        RgbaImage::from_fn(size, size, |x, y| {
            if (at..at + size / 4).contains(&x) && (at..at + size / 4).contains(&y) {
                Rgba(colour)
            } else {
                Rgba([242, 242, 242, 255])
            }
        })
    }

    #[test]
    fn identical_stills_do_not_differ() {
        let a = square(64, 8, [200, 30, 30, 255]);
        let d = difference(&a, &a.clone());
        assert_eq!(d.mad_pct, 0.0);
        assert!((d.ssim - 1.0).abs() < 1e-12, "{}", d.ssim);
    }

    #[test]
    fn a_moved_model_differs_and_more_movement_differs_more() {
        let a = square(64, 8, [200, 30, 30, 255]);
        let near = difference(&a, &square(64, 12, [200, 30, 30, 255]));
        let far = difference(&a, &square(64, 40, [200, 30, 30, 255]));
        assert!(near.mad_pct > 0.0 && near.ssim < 1.0);
        assert!(far.mad_pct > near.mad_pct && far.ssim < near.ssim, "{near:?} {far:?}");
        // Black against white everywhere: 100%.
        let black = RgbaImage::from_pixel(16, 16, Rgba([0, 0, 0, 255]));
        let white = RgbaImage::from_pixel(16, 16, Rgba([255, 255, 255, 255]));
        assert_eq!(difference(&black, &white).mad_pct, 100.0);
    }

    #[test]
    fn sizes_are_matched() {
        let a = square(64, 8, [10, 200, 10, 255]);
        let b = image::imageops::resize(&a, 128, 128, image::imageops::FilterType::Nearest);
        let d = difference(&a, &b);
        assert!(d.mad_pct < 1.0 && d.ssim > 0.95, "{d:?}");
    }
}
