#pragma once
// The kernel's spidev interface (linux/spi/spidev.h): its ioctl numbers are macros over the size of
// struct spi_ioc_transfer, which Swift cannot import; these wrappers take them from the header.
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <linux/spi/spidev.h>

/// Sets an spidev descriptor's SPI mode (0...3), bits per word and maximum clock in Hz. Returns 0, or the error
/// number of the first ioctl that failed, and in `failed` which: 1 mode, 2 bits per word, 3 speed (ENOTTY from
/// the first: not an SPI device).
static inline int hs_spi_configure(int fd, uint8_t mode, uint8_t bits, uint32_t speed_hz, int *failed) {
    *failed = 1;
    while (ioctl(fd, SPI_IOC_WR_MODE, &mode) < 0) { if (errno != EINTR) return errno; }
    *failed = 2;
    while (ioctl(fd, SPI_IOC_WR_BITS_PER_WORD, &bits) < 0) { if (errno != EINTR) return errno; }
    *failed = 3;
    while (ioctl(fd, SPI_IOC_WR_MAX_SPEED_HZ, &speed_hz) < 0) { if (errno != EINTR) return errno; }
    *failed = 0;
    return 0;
}

/// Sends `len` bytes as one transfer (SPI_IOC_MESSAGE(1)) at `speed_hz`, 8 bits a word: one chip-select
/// assertion for the whole frame. Returns 0, or the error number (EMSGSIZE: more than spidev's bufsiz, 4096 by
/// default).
static inline int hs_spi_write(int fd, const uint8_t *buf, uint32_t len, uint32_t speed_hz) {
    struct spi_ioc_transfer transfer;
    memset(&transfer, 0, sizeof transfer);
    transfer.tx_buf = (uint64_t)(uintptr_t)buf;
    transfer.len = len;
    transfer.speed_hz = speed_hz;
    transfer.bits_per_word = 8;
    while (ioctl(fd, SPI_IOC_MESSAGE(1), &transfer) < 0) { if (errno != EINTR) return errno; }
    return 0;
}
