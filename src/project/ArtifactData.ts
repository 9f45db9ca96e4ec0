/**
 * What a guest is told about one of its capsule's artifacts (the tool list a driver or a script
 * sees): the manifest's description of it, with its JSON schemas as text. Built from a resolved
 * artifact by `artifactData` (./CapsuleProject.ts); the sandbox carries it to the guest.
 */
export interface ArtifactData {
  readonly name: string
  readonly version: string
  readonly runtime: "wasm" | "native"
  readonly description: string
  readonly tags: ReadonlyArray<string>
  readonly inputSchema?: string | undefined
  readonly outputSchema?: string | undefined
}
