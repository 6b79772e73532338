// Named errors of the ONNX side: export (graph building, file limits) and running graphs with
// onnxruntime-web. Told apart by `name`, which survives comlink; messages say what to do.

/** Base class: `name` is the subclass name, so errors stay recognisable across workers. */
export class OnnxError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The model cannot be written as ONNX (too large, inconsistent shapes, ...). */
export class OnnxExportError extends OnnxError {}

/** onnxruntime-web could not be loaded, or rejected a graph or its inputs. */
export class OrtRuntimeError extends OnnxError {}
