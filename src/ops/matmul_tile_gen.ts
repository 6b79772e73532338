// What the register-tiled matmul generators share (matmul_gen.ts: the plain and grouped entries;
// matmul_tex_gen.ts: the texture forms): the entry signature, and the A·Bᵀ tile body, unrolled
// over an R×C tile, that each form writes with its own operands, bounds and stores.

export type Tiles = ReadonlyArray<readonly [rows: number, cols: number]>;

export const hasTile = (tiles: Tiles, r: number, c: number) =>
  tiles.some(([tr, tc]) => tr === r && tc === c);

/** The generated shaders' parts, one blank line apart. */
export const join = (parts: string[]) => parts.join("\n\n") + "\n";

export const sig = (name: string) =>
  `@compute @workgroup_size(WGX, WGY, 1)
fn ${name}(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {`;

/** How one A·Bᵀ tile body is written: the plain entries and the grouped ones differ only here. */
export interface NtTile {
  /** Indentation of the body's statements. */
  pad: string;
  /** The column-tile index (wid.x, or its offset within a group). */
  tile: string;
  M: string;
  N: string;
  K: string;
  B: string;
  /** Batch offsets of A and B in vec4s (plain entries), or none. */
  batched: boolean;
  /** One scalar accumulator per output (dot of the two vec4s) instead of four k-lane partials. */
  dot: boolean;
  /**
   * B is a read-only rgba32float storage texture named `B` holding row n of B [N, K] at texel
   * row n % H, in the n / H-th block of K/4 texel columns (H = this expression): textureLoad,
   * not storage loads.
   */
  textureRows?: string;
  /**
   * Normalize A's rows (RMSNorm folded into B): sum each row's squares in the k loop and scale
   * the row's outputs by rsqrt(mean + eps) when this expression (a bool) holds; `normEps` the eps.
   */
  normIf?: string;
  normEps?: string;
  /** Statements after the k loop, before the stores. */
  epilogue: string[];
  store(r: number, c: number, value: string): string;
}

export function ntLines(R: number, Cc: number, o: NtTile): string[] {
  const p = o.pad, q = `${p}  `;
  const L = [
    `${p}let col0 = (${o.tile} * WGX + lid.x) * ${Cc}u;`,
    `${p}let row0 = (wid.y * WGY + lid.y) * ${R}u;`,
    `${p}let K4 = ${o.K} / 4u;`,
  ];
  if (o.batched) {
    L.push(`${p}let aB = wid.z * p.strideA / 4u;`, `${p}let bB = wid.z * p.strideB / 4u;`);
  }
  const [aB, bB] = o.batched ? ["aB + ", "bB + "] : ["", ""];
  for (let r = 0; r < R; r++) L.push(`${p}let ra${r} = ${aB}min(row0 + ${r}u, ${o.M} - 1u) * K4;`);
  const H = o.textureRows;
  for (let c = 0; c < Cc; c++) {
    if (H) {
      L.push(
        `${p}let n${c} = min(col0 + ${c}u, ${o.N} - 1u);`,
        `${p}let yb${c} = i32(n${c} % ${H});`,
        `${p}let xb${c} = i32(n${c} / ${H} * K4);`,
      );
    } else L.push(`${p}let rb${c} = ${bB}min(col0 + ${c}u, ${o.N} - 1u) * K4;`);
  }
  L.push(`${p}var s: array<${o.dot ? "f32" : "vec4<f32>"}, ${R * Cc}>;`);
  if (o.normIf) L.push(`${p}var ss: array<f32, ${R}>;`);
  L.push(`${p}for (var k4 = 0u; k4 < K4; k4++) {`);
  for (let c = 0; c < Cc; c++) {
    L.push(
      H
        ? `${q}let b${c} = textureLoad(${o.B}, vec2<i32>(xb${c} + i32(k4), yb${c}));`
        : `${q}let b${c} = ${o.B}[rb${c} + k4];`,
    );
  }
  for (let r = 0; r < R; r++) {
    L.push(`${q}let a${r} = A[ra${r} + k4];`);
    if (o.normIf) L.push(`${q}ss[${r}] += dot(a${r}, a${r});`);
    for (let c = 0; c < Cc; c++) {
      const i = r * Cc + c;
      L.push(
        o.dot ? `${q}s[${i}] += dot(a${r}, b${c});` : `${q}s[${i}] = fma(a${r}, b${c}, s[${i}]);`,
      );
    }
  }
  L.push(`${p}}`, ...o.epilogue.map((e) => `${p}${e}`));
  if (!o.dot) L.push(`${p}let one = vec4(1.0);`);
  if (o.normIf) {
    L.push(`${p}let kf = f32(${o.K});`);
    for (let r = 0; r < R; r++) {
      L.push(
        `${p}let rs${r} = select(1.0, inverseSqrt(ss[${r}] / kf + ${o.normEps}), ${o.normIf});`,
      );
    }
  }
  for (let r = 0; r < R; r++) {
    for (let c = 0; c < Cc; c++) {
      const v = o.dot ? `s[${r * Cc + c}]` : `dot(s[${r * Cc + c}], one)`;
      L.push(`${p}${o.store(r, c, o.normIf ? `${v} * rs${r}` : v)}`);
    }
  }
  return L;
}

/**
 * Tiles of 128 outputs or more take the dot form: an R×C tile then holds R·C floats rather than
 * 4·R·C, which llvmpipe would spill (measured: docs/benchmarks.md, decode A·Bᵀ at 8 rows).
 */
export function ntDotForm(R: number, Cc: number): boolean {
  return R * Cc >= 128;
}
