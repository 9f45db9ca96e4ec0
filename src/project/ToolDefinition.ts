/**
 * A tool as the model sees it in the driver request's `tools` list: its name, its input schema
 * and a description. The capsule's own tools get theirs from their staged manifests
 * (../agent/DriverProtocol.ts, `buildToolList`); the runtime's own (`delegate-task`, the peer
 * tools) write theirs out. Pure data, so every part that offers a tool can name the shape.
 */
export interface ToolDefinition {
  readonly name: string
  readonly parameters: unknown
  readonly description?: string
}
