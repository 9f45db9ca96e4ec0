/**
 * A TCP proxy for reconnection tests: it forwards to a door and cuts its first connection just
 * inside the first occurrence of a marker in the response; later connections pass untouched.
 */
import { connect as createConnection, createServer, type Server, type Socket } from "node:net"

/** A TCP proxy to `target` that cuts its first connection just inside the first occurrence of `marker` in the response. */
export const startCuttingProxy = async (target: string, marker: string, cleanups: Array<() => Promise<void> | void>) => {
  const { hostname, port } = new URL(target)
  const requests: Array<string> = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const index = requests.length
    requests.push("")
    const upstream = createConnection(Number(port), hostname)
    sockets.add(client).add(upstream)
    let received = ""
    let cut = false
    client.on("data", (data: Buffer) => {
      requests[index] += data.toString("latin1")
      upstream.write(data)
    })
    upstream.on("data", (data: Buffer) => {
      if (cut) return
      const before = received.length
      received += data.toString("latin1")
      const at = index === 0 ? received.indexOf(marker) : -1
      if (at < 0) return void client.write(data)
      cut = true
      client.write(data.subarray(0, at + 3 - before))
      client.destroy()
      upstream.destroy()
    })
    client.on("end", () => upstream.end())
    upstream.on("end", () => client.end())
    client.on("error", () => upstream.destroy())
    upstream.on("error", () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const address = server.address() as { port: number }
  cleanups.push(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { url: `http://127.0.0.1:${address.port}/`, requests }
}
