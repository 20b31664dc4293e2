// Test helper: writes tar files member by member with libarchive (pax format, so
// long names get extended headers), including the links and hostile names the
// reader must reject; and, byte by byte, pax tars laid out as Python's tarfile
// writes them (format=tarfile.PAX_FORMAT), independent of libarchive.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace seedloader::testing {

struct Member {
  enum Type { kFile, kSymlink, kHardlink } type = kFile;
  std::string name;
  std::vector<std::uint8_t> data;
  std::string target;
};

// Writes a pax tar (long names get pax extended headers) or a GNU tar.
inline void write_tar(const std::string& path, const std::vector<Member>& members,
                      bool gnu = false) {
  archive* a = archive_write_new();
  if (gnu) {
    archive_write_set_format_gnutar(a);  // long names as ././@LongLink members
  } else {
    archive_write_set_format_pax_restricted(a);
  }
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  for (const Member& m : members) {
    archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_perm(e, 0644);
    if (m.type == Member::kSymlink) {
      archive_entry_set_filetype(e, AE_IFLNK);
      archive_entry_set_symlink(e, m.target.c_str());
    } else {
      archive_entry_set_filetype(e, AE_IFREG);
      if (m.type == Member::kHardlink) archive_entry_set_hardlink(e, m.target.c_str());
      archive_entry_set_size(e, m.type == Member::kHardlink ? 0 : m.data.size());
    }
    ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK) << archive_error_string(a);
    if (m.type == Member::kFile && !m.data.empty()) {
      ASSERT_EQ(archive_write_data(a, m.data.data(), m.data.size()),
                static_cast<la_ssize_t>(m.data.size()));
    }
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

// Writes regular-file members as Python's tarfile does with PAX_FORMAT: a member
// whose name is not ASCII gets a pax 'x' header ("NN path=<UTF-8 name>\n"),
// then a ustar header whose name has '?' for each non-ASCII byte; the archive
// ends with zero blocks up to a 10240-byte record.
inline void write_python_pax_tar(const std::string& path,
                                 const std::vector<Member>& members) {
  std::vector<char> out;
  auto block = [&](char type, const std::string& name, std::size_t size) {
    char h[512] = {};
    std::snprintf(h, 100, "%s", name.c_str());
    std::snprintf(h + 100, 8, "%07o", 0644);
    std::snprintf(h + 108, 8, "%07o", 0);
    std::snprintf(h + 116, 8, "%07o", 0);
    std::snprintf(h + 124, 12, "%011zo", size);
    std::snprintf(h + 136, 12, "%011o", 0);
    h[156] = type;
    std::memcpy(h + 257,
                "ustar\0"
                "00",
                8);
    std::memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (unsigned char c : h) sum += c;
    std::snprintf(h + 148, 8, "%06o", sum);  // six digits, NUL, then the space
    out.insert(out.end(), h, h + 512);
  };
  auto data = [&](const char* p, std::size_t n) {
    out.insert(out.end(), p, p + n);
    out.resize((out.size() + 511) / 512 * 512, '\0');
  };
  for (const Member& m : members) {
    std::string ascii = m.name;
    bool plain = true;
    for (char& c : ascii) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        c = '?';
        plain = false;
      }
    }
    if (!plain) {
      const std::string body = " path=" + m.name + "\n";
      std::size_t len = body.size() + 1;
      while (std::to_string(len).size() + body.size() != len) ++len;
      const std::string record = std::to_string(len) + body;
      block('x', "././@PaxHeader", record.size());
      data(record.data(), record.size());
    }
    block('0', ascii, m.data.size());
    data(reinterpret_cast<const char*>(m.data.data()), m.data.size());
  }
  out.resize(out.size() + 1024, '\0');
  out.resize((out.size() + 10239) / 10240 * 10240, '\0');
  std::ofstream f(path, std::ios::binary);
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  ASSERT_TRUE(f.good()) << path;
}

}  // namespace seedloader::testing
