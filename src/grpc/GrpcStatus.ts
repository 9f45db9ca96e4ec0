/**
 * Door errors as gRPC statuses (A2A 1.0 §10.6). The code is 1.0.1's for the error
 * (../http/A2a1Errors.ts holds the table for every binding), the status message the error's, and
 * the details go the standard way: trailer `grpc-status-details-bin` holds a binary
 * `google.rpc.Status` whose one detail is the `google.rpc.ErrorInfo` the other bindings send as
 * JSON. The official SDK client picks the error class by that `ErrorInfo.reason`.
 */
import { Metadata, status, type StatusObject } from "@grpc/grpc-js"
import { grpcErrorOf } from "../http/A2a1Errors.js"
import type { RpcError } from "../http/RpcErrors.js"
import { ErrorInfo } from "./generated/google/rpc/error_details.js"
import { Status } from "./generated/google/rpc/status.js"

export type GrpcStatus = Pick<StatusObject, "code" | "details" | "metadata">

const errorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"

const codeOf = (name: string): status => {
  const code = (status as unknown as Record<string, status | undefined>)[name]
  return code ?? status.INTERNAL
}

/** The status a door error is answered with, details trailer included. */
export const grpcStatus = (error: RpcError): GrpcStatus => {
  const mapped = grpcErrorOf(error)
  const code = codeOf(mapped.status)
  const info = ErrorInfo.encode({ reason: mapped.reason, domain: mapped.domain, metadata: mapped.metadata }).finish()
  const details = Status.encode({ code, message: error.message, details: [{ typeUrl: errorInfoType, value: Buffer.from(info) }] }).finish()
  const metadata = new Metadata()
  metadata.set("grpc-status-details-bin", Buffer.from(details))
  return { code, details: error.message, metadata }
}

/** A status with no A2A details: authentication, a session closing, a failure of our own. */
export const plainStatus = (code: status, details: string): GrpcStatus => ({ code, details, metadata: new Metadata() })
