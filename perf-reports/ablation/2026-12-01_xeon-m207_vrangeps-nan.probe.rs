// Probe of VRANGEPS's NaN and signed-zero rules, run on the Intel Xeon VM of family 6 model 207
// (2026-12-01): `rustc -O 2026-12-01_xeon-m207_vrangeps-nan.probe.rs && ./2026-12-01_xeon-m207_vrangeps-nan.probe`
// imm8 [1:0] = 01 max, 00 min; [3:2] = 00 sign of src1, 01 sign of the compare result, 10 sign cleared.
// Output there (the rows that decide it):
//   a=-0.0 b=0.0           | max01 0.0  (and a=0.0 b=-0.0: max01 0.0): -0 orders below +0 either way
//   a=NaN(7fc00001) b=1.0  | every form returns 1.0
//   a=1.0 b=NaN(7fc00002)  | every form returns 1.0  (a quiet NaN and a number give the number: IEEE maxNum)
//   a=NaN b=NaN            | NaN(7fc00001)
// So vrangeps cannot keep a NaN message in copy_u_max's accumulator (simd/src/kernels/spmm/reduce.rs, `fold_probe`).
use std::arch::x86_64::*;
#[target_feature(enable="avx512f,avx512dq")]
unsafe fn t<const I: i32>(a: f32, b: f32) -> f32 { let r = _mm512_range_ps::<I>(_mm512_set1_ps(a), _mm512_set1_ps(b)); _mm512_cvtss_f32(r) }
fn show(x: f32) -> String { if x.is_nan() { format!("NaN({:x})", x.to_bits()) } else { format!("{:?}", x) } }
fn main(){
  let qa = f32::from_bits(0x7fc0_0001); let qb = f32::from_bits(0x7fc0_0002);
  let cases = [(-0.0f32, 0.0f32),(0.0,-0.0),(1.0,2.0),(2.0,1.0),(-3.0,2.0),(2.0,-3.0),(-2.0,2.0),(2.0,-2.0),(qa,1.0),(1.0,qb),(qa,qb),(f32::NEG_INFINITY,1.0),(-5.0,-3.0)];
  for (a,b) in cases { unsafe {
    println!("a={:>12} b={:>12} | max00 {:>12} max01(4|1=5) {:>12} min00 {:>12} min01 {:>12} | max_imm1 {:>12}", show(a), show(b), show(t::<0b0001>(a,b)), show(t::<0b0101>(a,b)), show(t::<0b0000>(a,b)), show(t::<0b0100>(a,b)), show(t::<0b1001>(a,b)));
  }}
}
