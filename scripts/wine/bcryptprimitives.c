/*
 * A stand-in for Windows' bcryptprimitives.dll under Wine 8 (Debian 12),
 * which lacks it; Windows 10 and later ship it. Bun's Windows runtime imports
 * one function from it, ProcessPrng: fill a buffer from the system CSPRNG.
 * This forwards to RtlGenRandom (advapi32's SystemFunction036), which Wine
 * implements. Used only by scripts/e2e_windows.sh, never shipped.
 *
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
 */
#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID, ULONG);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
  while (len > 0) {
    ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
    if (!SystemFunction036(data, n)) return FALSE;
    data += n; len -= n;
  }
  return TRUE;
}
