// A strict reader for the pickled CIFAR-10 files that torchvision downloads
// (cifar-10-batches-py): data_batch_1 .. data_batch_5, test_batch and
// batches.meta, each written by Python 2's cPickle at protocol 2.
//
// It is not an unpickler. It walks the one opcode sequence cPickle emits for
// these dicts and refuses everything else:
//   batch: PROTO 2, EMPTY_DICT, then the keys data, labels, batch_label and
//     filenames (each exactly once, in any order; batched with MARK..SETITEMS
//     or one SETITEM), STOP, end of file. `data` is
//     GLOBAL numpy.core.multiarray _reconstruct, GLOBAL numpy ndarray, (0,), 'b',
//     REDUCE, then BUILD with the state (1, (N, 3072), dtype, False, raw bytes),
//     where dtype is GLOBAL numpy dtype ('u1', 0, 1) REDUCE BUILD with the state
//     (3, '|', None, None, None, -1, -1, 0). `labels` is a list of N ints in
//     [0, 10), `filenames` a list of N strings, `batch_label` a string.
//   meta: label_names (a list of 10 strings), num_cases_per_batch, num_vis (an
//     int, 3072).
// Integers are BININT1, BININT2 or BININT; strings SHORT_BINSTRING, BINSTRING or
// BINUNICODE; lists EMPTY_LIST then MARK..APPENDS batches or one APPEND.
// BINPUT / LONG_BINPUT may follow any object (cPickle memoizes by reference
// count, so where they appear varies); BINGET, any other GLOBAL and every other
// opcode are refused. Python 3's pickle.dumps(protocol=2) stores the raw bytes as
// GLOBAL _codecs encode, so a batch re-pickled by Python 3 is refused too: the
// reader takes the files as published, not every pickle that loads the same.
//
// The pixel bytes are not read here: only their offset is kept, and a row is
// read later with pread. Strings are bounded (kMaxPickleString), rows and list
// items by kMaxPickleRows; a length beyond the end of the file is refused before anything
// is allocated. Every refusal is a DataError naming the file and the byte
// offset of the opcode at fault. Pure functions of the file; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/file_io.h"

namespace seedloader {

inline constexpr std::uint64_t kCifarRowBytes = 3 * 32 * 32;
// Longest key, label name, file name or batch label accepted.
inline constexpr std::uint64_t kMaxPickleString = 4096;
// Most rows, and most items in a list, accepted in one file (the published
// files hold 10000).
inline constexpr std::uint64_t kMaxPickleRows = std::uint64_t{1} << 24;

struct CifarPickleBatch {
  std::uint64_t rows = 0;
  std::uint64_t data_offset = 0;     // row r is kCifarRowBytes at data_offset + r * 3072
  std::vector<std::uint8_t> labels;  // one per row, each < 10
};

// Reads one data_batch_* / test_batch file's structure. Throws DataError.
CifarPickleBatch read_cifar_pickle_batch(const FileHandle& file);

// Reads batches.meta and returns its label_names. Throws DataError.
std::vector<std::string> read_cifar_pickle_meta(const FileHandle& file);

}  // namespace seedloader
