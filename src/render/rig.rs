//! The studio rig: view angles, the camera that frames the scene's bounding
//! sphere, and the fixed three-point lighting.
//!
//! Angles follow DESIGN.md "Render": `rv` is the elevation in degrees
//! [-90, 90], `rh` the azimuth in degrees [0, 360) around +Y, measured from
//! the front (+Z) towards +X. Lights are fixed relative to the camera, so
//! every view is lit the same way: a warm key light above and to the right,
//! a cool fill from the left, a rim light from behind, and a sky/ground
//! ambient term.

pub use crate::report::views::{Angle, STANDARD_ANGLES};

/// The turntable's elevation: the three-quarter view's.
pub const TURNTABLE_ELEVATION: f64 = 30.0;

/// Vertical field of view, degrees: a long studio lens, little distortion.
pub const FOV_Y_DEG: f64 = 30.0;

/// Camera matrices for one view of a sphere (centre at the origin, since
/// the scene is recentred before upload).
#[derive(Debug, Clone, Copy)]
pub struct Camera {
    /// Projection times view, column-major.
    pub view_proj: [[f32; 4]; 4],
    /// Eye position.
    pub eye: [f32; 3],
    /// Unit vectors of the camera frame in world space: right, up, and back (towards the eye).
    pub right: [f32; 3],
    /// See `right`.
    pub up: [f32; 3],
    /// See `right`.
    pub back: [f32; 3],
}

/// The camera that frames a sphere of `radius` about the origin from `angle`.
pub fn camera(angle: Angle, radius: f64) -> Camera {
    let r = if radius.is_finite() && radius > 0.0 { radius } else { 1.0 };
    let (v, h) = (angle.rv.to_radians(), angle.rh.to_radians());
    // Direction from the centre to the eye.
    let back = [v.cos() * h.sin(), v.sin(), v.cos() * h.cos()];
    // Up: the direction of increasing elevation (continuous through the poles:
    // seen from the top, the front of the model is at the bottom of the image).
    let up = [-v.sin() * h.sin(), v.cos(), -v.sin() * h.cos()];
    let right = cross(up, back);
    let half = (FOV_Y_DEG / 2.0).to_radians();
    let dist = r / half.sin();
    let eye = [back[0] * dist, back[1] * dist, back[2] * dist];
    let near = (dist - r * 1.05).max(dist * 1e-3);
    let far = dist + r * 1.05;
    // View: rows are the camera axes; the camera looks down -back.
    let view = [
        [right[0], up[0], back[0], 0.0],
        [right[1], up[1], back[1], 0.0],
        [right[2], up[2], back[2], 0.0],
        [-dot(right, eye), -dot(up, eye), -dot(back, eye), 1.0],
    ];
    // Perspective, right-handed, depth 0..1 (wgpu).
    let f = 1.0 / half.tan();
    let proj = [
        [f, 0.0, 0.0, 0.0],
        [0.0, f, 0.0, 0.0],
        [0.0, 0.0, far / (near - far), -1.0],
        [0.0, 0.0, near * far / (near - far), 0.0],
    ];
    let vp = mul(&proj, &view);
    let f32s = |a: [f64; 3]| [a[0] as f32, a[1] as f32, a[2] as f32];
    Camera {
        view_proj: vp.map(|c| c.map(|x| x as f32)),
        eye: f32s(eye),
        right: f32s(right),
        up: f32s(up),
        back: f32s(back),
    }
}

/// One light of the rig, in camera space (x right, y up, z towards the eye).
#[derive(Debug, Clone, Copy)]
pub struct Light {
    /// Direction towards the light (unnormalised).
    pub dir: [f64; 3],
    /// Linear RGB colour times intensity.
    pub color: [f32; 3],
}

/// Key, fill and rim.
pub const LIGHTS: [Light; 3] = [
    Light { dir: [0.55, 0.65, 0.55], color: [2.7, 2.6, 2.45] },
    Light { dir: [-0.7, 0.15, 0.7], color: [0.75, 0.8, 0.9] },
    Light { dir: [0.1, 0.55, -0.85], color: [1.6, 1.6, 1.6] },
];

/// Ambient light from above (sky) and below (ground), linear RGB.
pub const AMBIENT_SKY: [f32; 3] = [0.42, 0.44, 0.48];
/// See [`AMBIENT_SKY`].
pub const AMBIENT_GROUND: [f32; 3] = [0.2, 0.19, 0.18];

/// A light's direction in world space for a camera.
pub fn light_dir_world(cam: &Camera, light: &Light) -> [f32; 3] {
    let d = light.dir;
    let n = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let (x, y, z) = ((d[0] / n) as f32, (d[1] / n) as f32, (d[2] / n) as f32);
    [
        cam.right[0] * x + cam.up[0] * y + cam.back[0] * z,
        cam.right[1] * x + cam.up[1] * y + cam.back[1] * z,
        cam.right[2] * x + cam.up[2] * y + cam.back[2] * z,
    ]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Column-major 4x4 product.
fn mul(a: &[[f64; 4]; 4], b: &[[f64; 4]; 4]) -> [[f64; 4]; 4] {
    let mut out = [[0.0; 4]; 4];
    for (c, col) in out.iter_mut().enumerate() {
        for (r, v) in col.iter_mut().enumerate() {
            *v = (0..4).map(|k| a[k][r] * b[c][k]).sum();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(cam: &Camera, p: [f32; 3]) -> [f32; 3] {
        let m = cam.view_proj;
        let v: Vec<f32> = (0..4).map(|r| m[0][r] * p[0] + m[1][r] * p[1] + m[2][r] * p[2] + m[3][r]).collect();
        [v[0] / v[3], v[1] / v[3], v[2] / v[3]]
    }

    #[test]
    fn front_view_looks_down_minus_z() {
        let cam = camera(Angle { rv: 0.0, rh: 0.0 }, 1.0);
        assert!(cam.eye[2] > 1.0 && cam.eye[0].abs() < 1e-6);
        // +X is on the right of the image, +Y at the top; the centre projects to the middle.
        assert!(project(&cam, [0.5, 0.0, 0.0])[0] > 0.0);
        assert!(project(&cam, [0.0, 0.5, 0.0])[1] > 0.0);
        let c = project(&cam, [0.0; 3]);
        assert!(c[0].abs() < 1e-6 && c[1].abs() < 1e-6 && (0.0..1.0).contains(&c[2]));
    }

    #[test]
    fn the_sphere_fits_every_view() {
        for (_, a) in STANDARD_ANGLES {
            let cam = camera(a, 2.0);
            for p in [
                [2.0, 0.0, 0.0],
                [-2.0, 0.0, 0.0],
                [0.0, 2.0, 0.0],
                [0.0, -2.0, 0.0],
                [0.0, 0.0, 2.0],
                [0.0, 0.0, -2.0],
            ] {
                let q = project(&cam, p);
                assert!(q[0].abs() <= 1.0 && q[1].abs() <= 1.0 && (0.0..=1.0).contains(&q[2]), "{a:?} {p:?} {q:?}");
            }
        }
    }

    #[test]
    fn right_view_sees_plus_x_and_top_puts_front_at_the_bottom() {
        let cam = camera(Angle { rv: 0.0, rh: 90.0 }, 1.0);
        assert!(cam.eye[0] > 1.0);
        // From the right, the front (+Z) is on the left of the image.
        assert!(project(&cam, [0.0, 0.0, 0.5])[0] < 0.0);
        let top = camera(Angle { rv: 90.0, rh: 0.0 }, 1.0);
        assert!(top.eye[1] > 1.0);
        assert!(project(&top, [0.0, 0.0, 0.5])[1] < 0.0);
        assert!(project(&top, [0.5, 0.0, 0.0])[0] > 0.0);
    }

    #[test]
    fn angles_are_checked() {
        assert!(Angle { rv: 91.0, rh: 0.0 }.validate().is_err());
        assert!(Angle { rv: 0.0, rh: -1.0 }.validate().is_err());
        assert!(Angle { rv: f64::NAN, rh: 0.0 }.validate().is_err());
        assert_eq!(Angle { rv: 0.0, rh: 360.0 }.validate().unwrap().rh, 0.0);
        assert_eq!(Angle { rv: 30.0, rh: 45.0 }.standard_name(), Some("three_quarter"));
        assert_eq!(Angle { rv: -12.5, rh: 10.0 }.file_stem(3), "view03_rvm12p5_rh10");
    }
}
