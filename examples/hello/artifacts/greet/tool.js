// greet: a murmur:tool/run guest. Input data is JSON {"name": "..."}; the result is a greeting.
// Bad input is the tool's own error result, which the agent loop feeds back to the model.
export const run = {
  run(input) {
    let name;
    try {
      name = JSON.parse(input.data ?? "{}").name;
    } catch (error) {
      return { status: "error", summary: "input must be JSON: " + String(error), data: null, dataPath: null, truncated: false, metadata: [] };
    }
    if (typeof name !== "string" || name.trim() === "") {
      return { status: "error", summary: "input needs a non-empty \"name\" string", data: null, dataPath: null, truncated: false, metadata: [] };
    }
    return { status: "passed", summary: "greeted", data: "Hello, " + name.trim() + "! (from the greet tool, a WebAssembly component)", dataPath: null, truncated: false, metadata: [] };
  }
};
