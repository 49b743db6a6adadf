//! Animated GIF encoding for turntable renders.
//!
//! A turntable is a sequence of same-sized RGBA frames of the model rotating about its vertical axis. Each frame gets
//! its own (local) 256-entry palette: 255 colours found by NeuQuant (sample factor 10) from the frame's opaque pixels,
//! plus index 255 reserved for transparency. GIF has only 1-bit transparency, so pixels with alpha below 128 become
//! transparent and the rest opaque. The animation loops forever; frames that use transparency are disposed to the
//! background so that a transparent turntable does not smear.

use std::borrow::Cow;

use ::gif::{DisposalMethod, Encoder, Frame, Repeat};
use color_quant::NeuQuant;
use image::RgbaImage;

/// NeuQuant sample factor: 1 is best and slowest, 30 fastest; 10 is the usual compromise.
const SAMPLE_FACTOR: i32 = 10;
/// Number of palette colours NeuQuant computes; the 256th index is reserved for transparency.
const PALETTE_COLOURS: usize = 255;
/// Frames with fewer opaque pixels than this have them repeated for NeuQuant's training, which only looks at one
/// pixel in `SAMPLE_FACTOR`.
const MIN_TRAINING_PIXELS: usize = 4096;
/// Palette index of transparent pixels.
const TRANSPARENT_INDEX: u8 = 255;
/// Pixels with alpha below this are written as transparent.
const ALPHA_THRESHOLD: u8 = 128;
/// Length of one full turn in hundredths of a second.
const TURN_CS: u32 = 400;
/// Smallest frame delay in hundredths of a second: browsers treat smaller delays as 10.
const MIN_DELAY_CS: u16 = 2;

/// Encodes `frames` as an endlessly looping animated GIF, showing each frame for `delay_cs` hundredths of a second.
///
/// Returns the GIF file's bytes. Errors (as a human-readable message) when there are no frames, when the frames
/// differ in size, when a frame is empty (zero width or height) or larger than 65535 pixels in either direction, or
/// when the encoder fails.
pub fn encode_turntable(frames: &[RgbaImage], delay_cs: u16) -> Result<Vec<u8>, String> {
    let first = frames.first().ok_or_else(|| "cannot encode a GIF without frames".to_string())?;
    let (w, h) = first.dimensions();
    if let Some((i, f)) = frames.iter().enumerate().find(|(_, f)| f.dimensions() != (w, h)) {
        return Err(format!(
            "GIF frame {i} is {}x{} but frame 0 is {w}x{h}: all frames must have the same size",
            f.width(),
            f.height()
        ));
    }
    if w == 0 || h == 0 {
        return Err(format!("cannot encode an empty {w}x{h} GIF"));
    }
    let too_big = || format!("{w}x{h} is too large for a GIF (at most 65535x65535)");
    let width = u16::try_from(w).map_err(|_| too_big())?;
    let height = u16::try_from(h).map_err(|_| too_big())?;

    let mut encoder = Encoder::new(Vec::new(), width, height, &[]).map_err(|e| format!("GIF encoder: {e}"))?;
    encoder.set_repeat(Repeat::Infinite).map_err(|e| format!("GIF encoder: {e}"))?;
    for (i, image) in frames.iter().enumerate() {
        let (palette, indices, transparent) = quantize(image);
        let frame = Frame {
            delay: delay_cs,
            dispose: if transparent { DisposalMethod::Background } else { DisposalMethod::Keep },
            transparent: transparent.then_some(TRANSPARENT_INDEX),
            width,
            height,
            palette: Some(palette),
            buffer: Cow::Owned(indices),
            ..Frame::default()
        };
        encoder.write_frame(&frame).map_err(|e| format!("GIF frame {i}: {e}"))?;
    }
    encoder.into_inner().map_err(|e| format!("GIF encoder: {e}"))
}

/// The per-frame delay, in hundredths of a second, that makes `frames` frames last one 4-second turn: rounded to the
/// nearest hundredth and at least 2 (browsers slow down smaller delays). `0` frames is treated as 1.
pub fn frame_delay_cs(frames: u32) -> u16 {
    let frames = frames.max(1);
    // Round half up without overflow: `frames / 2 + TURN_CS` cannot exceed `u32::MAX`.
    let delay = (TURN_CS + frames / 2) / frames;
    u16::try_from(delay).unwrap_or(u16::MAX).max(MIN_DELAY_CS)
}

/// Builds a frame's local palette (256 RGB entries) and its palette indices, one per pixel in row-major order; the
/// flag tells whether any pixel is transparent (index 255).
fn quantize(image: &RgbaImage) -> (Vec<u8>, Vec<u8>, bool) {
    let mut opaque: Vec<u8> =
        image.pixels().filter(|p| p.0[3] >= ALPHA_THRESHOLD).flat_map(|p| [p.0[0], p.0[1], p.0[2], u8::MAX]).collect();
    let opaque_len = opaque.len();
    let transparent = opaque_len / 4 < image.pixels().len();
    // NeuQuant learns from one pixel in SAMPLE_FACTOR: repeat a small sample so that tiny frames still train.
    if opaque_len > 0 {
        while opaque.len() < MIN_TRAINING_PIXELS * 4 {
            opaque.extend_from_within(..opaque_len);
        }
    }
    let quant = NeuQuant::new(SAMPLE_FACTOR, PALETTE_COLOURS, &opaque);
    let mut palette = quant.color_map_rgb();
    palette.resize(256 * 3, 0);
    let indices = image
        .pixels()
        .map(|p| {
            let [r, g, b, a] = p.0;
            if a < ALPHA_THRESHOLD {
                TRANSPARENT_INDEX
            } else {
                // NeuQuant's indices are below PALETTE_COLOURS (255), so they always fit and never hit the
                // transparent index.
                u8::try_from(quant.index_of(&[r, g, b, u8::MAX])).unwrap_or(TRANSPARENT_INDEX - 1)
            }
        })
        .collect();
    (palette, indices, transparent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ::gif::{ColorOutput, DecodeOptions};
    use image::Rgba;

    /// A decoded frame: width, height, delay, disposal, transparent index and RGBA pixels.
    struct Decoded {
        width: u16,
        height: u16,
        delay: u16,
        dispose: DisposalMethod,
        transparent: Option<u8>,
        rgba: Vec<u8>,
    }

    fn decode(bytes: &[u8]) -> (Repeat, Vec<Decoded>) {
        let mut options = DecodeOptions::new();
        options.set_color_output(ColorOutput::RGBA);
        let mut decoder = options.read_info(bytes).expect("GIF header");
        let mut frames = Vec::new();
        while let Some(f) = decoder.read_next_frame().expect("GIF frame") {
            frames.push(Decoded {
                width: f.width,
                height: f.height,
                delay: f.delay,
                dispose: f.dispose,
                transparent: f.transparent,
                rgba: f.buffer.to_vec(),
            });
        }
        (decoder.repeat(), frames)
    }

    /// A `w`x`h` frame with a blob whose position depends on `phase`, over an opaque gradient.
    fn frame(w: u32, h: u32, phase: u32) -> RgbaImage {
        RgbaImage::from_fn(w, h, |x, y| {
            let (dx, dy) = (x.abs_diff((phase * 7) % w), y.abs_diff(h / 2));
            if dx * dx + dy * dy < 64 {
                Rgba([250, 180, 20, 255])
            } else {
                Rgba([(x * 255 / w) as u8, (y * 255 / h) as u8, 90, 255])
            }
        })
    }

    #[test]
    fn round_trip_metadata() {
        let frames: Vec<RgbaImage> = (0..5).map(|i| frame(40, 30, i)).collect();
        let bytes = encode_turntable(&frames, 7).expect("encodes");
        assert_eq!(&bytes[..6], b"GIF89a");
        let (repeat, decoded) = decode(&bytes);
        assert_eq!(repeat, Repeat::Infinite);
        assert_eq!(decoded.len(), 5);
        for f in &decoded {
            assert_eq!((f.width, f.height), (40, 30));
            assert_eq!(f.delay, 7);
            assert_eq!(f.dispose, DisposalMethod::Keep);
            assert_eq!(f.transparent, None);
            assert_eq!(f.rgba.len(), 40 * 30 * 4);
            assert!(f.rgba.chunks_exact(4).all(|p| p[3] == 255));
        }
    }

    #[test]
    fn solid_quadrants_keep_their_colours() {
        let colours = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]];
        let (w, h) = (64, 48);
        let quadrant = |x: u32, y: u32| usize::from(x >= w / 2) + 2 * usize::from(y >= h / 2);
        let img = RgbaImage::from_fn(w, h, |x, y| {
            let [r, g, b] = colours[quadrant(x, y)];
            Rgba([r, g, b, 255])
        });
        let (_, decoded) = decode(&encode_turntable(&[img], 10).expect("encodes"));
        assert_eq!(decoded.len(), 1);
        for (i, px) in decoded[0].rgba.chunks_exact(4).enumerate() {
            let (x, y) = (i as u32 % w, i as u32 / w);
            let want = colours[quadrant(x, y)];
            for c in 0..3 {
                assert!(px[c].abs_diff(want[c]) <= 8, "({x}, {y}): got {px:?}, want {want:?}");
            }
            assert_eq!(px[3], 255);
        }
    }

    #[test]
    fn transparent_pixels_stay_transparent() {
        // Left half transparent (alpha 0 and 127), right half opaque-ish (alpha 128 and 255).
        let img = RgbaImage::from_fn(32, 16, |x, y| match (x < 16, y % 2 == 0) {
            (true, true) => Rgba([255, 0, 0, 0]),
            (true, false) => Rgba([0, 255, 0, 127]),
            (false, true) => Rgba([0, 0, 255, 128]),
            (false, false) => Rgba([200, 200, 200, 255]),
        });
        let opaque = RgbaImage::from_pixel(32, 16, Rgba([10, 20, 30, 255]));
        let (_, decoded) = decode(&encode_turntable(&[img, opaque], 3).expect("encodes"));
        assert_eq!(decoded.len(), 2);
        let f = &decoded[0];
        assert_eq!(f.transparent, Some(TRANSPARENT_INDEX));
        assert_eq!(f.dispose, DisposalMethod::Background);
        for (i, px) in f.rgba.chunks_exact(4).enumerate() {
            let x = i % 32;
            assert_eq!(px[3] == 0, x < 16, "pixel {i}: {px:?}");
        }
        // A frame without transparent pixels keeps the plain settings.
        assert_eq!(decoded[1].transparent, None);
        assert_eq!(decoded[1].dispose, DisposalMethod::Keep);
    }

    #[test]
    fn fully_transparent_and_tiny_frames() {
        let empty = RgbaImage::new(3, 2);
        let (_, decoded) = decode(&encode_turntable(&[empty], 2).expect("encodes"));
        assert!(decoded[0].rgba.chunks_exact(4).all(|p| p[3] == 0));
        // Tiny frames still get their colours (NeuQuant alone would not train on fewer than 10 pixels).
        for (w, h) in [(1, 1), (2, 1), (3, 3)] {
            let img = RgbaImage::from_fn(w, h, |x, y| {
                if (x + y) % 2 == 0 { Rgba([255, 0, 0, 255]) } else { Rgba([0, 0, 255, 255]) }
            });
            let (_, decoded) = decode(&encode_turntable(std::slice::from_ref(&img), 2).expect("encodes"));
            assert_eq!(decoded[0].rgba.len(), img.as_raw().len());
            for (got, want) in decoded[0].rgba.chunks_exact(4).zip(img.pixels()) {
                assert!(got.iter().zip(want.0).all(|(g, w)| g.abs_diff(w) <= 8), "{w}x{h}: got {got:?}, want {want:?}");
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        assert!(encode_turntable(&[], 4).is_err());
        let err = encode_turntable(&[frame(8, 8, 0), frame(8, 9, 1)], 4).unwrap_err();
        assert!(err.contains("same size"), "{err}");
        assert!(encode_turntable(&[RgbaImage::new(0, 5)], 4).is_err());
        assert!(encode_turntable(&[RgbaImage::new(65536, 1)], 4).is_err());
    }

    #[test]
    fn delays() {
        assert_eq!(frame_delay_cs(1), 400);
        assert_eq!(frame_delay_cs(0), 400);
        assert_eq!(frame_delay_cs(36), 11); // 11.1
        assert_eq!(frame_delay_cs(60), 7); // 6.67
        assert_eq!(frame_delay_cs(72), 6); // 5.56
        assert_eq!(frame_delay_cs(120), 3); // 3.33
        assert_eq!(frame_delay_cs(160), 3); // 2.5 rounds up
        assert_eq!(frame_delay_cs(200), 2);
        assert_eq!(frame_delay_cs(1000), 2);
        assert_eq!(frame_delay_cs(u32::MAX), 2);
    }
}
