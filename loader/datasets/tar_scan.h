// Scanning a tar shard's headers into samples, the WebDataset way, and the table
// of member kinds: members whose names share a key (the name up to the first dot
// of its last component) form one sample, which must be consecutive in its
// shard; by extension a member is the image (an image extension), the label
// (label_ext, "cls" by default), the image's restart index (kRestartExt, written
// by seedloader-pack --jpeg-restart), or ignored. The one reader of shard
// headers: TarShards' index and seedloader-pack's tar: source both scan here.
// Stateless; safe across threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/file_io.h"

namespace seedloader {

// The restart index member's extension.
inline constexpr std::string_view kRestartExt = "rst";

enum class MemberKind { kImage, kLabel, kRestart, kIgnored };
// What a member with extension `ext` (after the key's dot, e.g. "jpg" or
// "seg.png") is in a sample whose labels have extension `label_ext`.
MemberKind member_kind(std::string_view ext, std::string_view label_ext);

// A member's data in its shard.
struct MemberSpan {
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

// One sample as a scan finds it; the views live until the callback returns.
struct ScannedSample {
  std::string_view key;
  std::string_view image_ext;  // as the member's name spells it
  MemberSpan image;
  MemberSpan label;
  MemberSpan restart;  // size 0: none
};

// Reads the tar headers of the shard open as `file` and calls sample() for every
// sample, in order. Member names are untrusted: a name with a ".." component, an
// absolute name, a link, a device or other non-regular member, a sparse member,
// data past the shard's end, a sample without an image or a label, a second
// member of one kind, a key split across the shard or a compressed shard throws
// DataError naming the shard (file.path()) and the member.
void scan_tar_shard(const FileHandle& file, const std::string& label_ext,
                    const std::function<void(const ScannedSample&)>& sample);

}  // namespace seedloader
