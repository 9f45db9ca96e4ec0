/** Whether a process runs, for markers and locks that name their owner's pid (EPERM: alive, another user's). */
export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}
