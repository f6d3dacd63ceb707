// What the tests share (not a test file: node --test runs *.test.mjs).

// A plotly typed-array spec ({dtype, bdata, shape}) of ``values``, as plotly.py writes one.
export const spec = (Kind, dtype, values, shape) => {
  const out = { dtype, bdata: Buffer.from(new Kind(values).buffer).toString("base64") };
  if (shape !== undefined) out.shape = shape;
  return out;
};
