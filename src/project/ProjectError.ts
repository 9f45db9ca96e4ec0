/**
 * Why a capsule directory cannot be launched: the reference's launch errors (`E-RUN-…`,
 * `E-REG-…`) and manifest errors (`E-MAN-…`, `E-CAP-…`), each with its code and exact text.
 */
import { Schema } from "effect"

export class ProjectError extends Schema.TaggedError<ProjectError>()("ProjectError", {
  code: Schema.String,
  message: Schema.String
}) {}
