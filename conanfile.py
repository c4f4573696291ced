# SPDX-License-Identifier: Apache-2.0
"""Conan 2 recipe for ferry: `conan create . --build=missing` builds the package and runs
tests/package/conan/, the test package. The options mirror ferry's CMake options (FERRY_IMAGE,
FERRY_VIDEO, FERRY_HTTP, FERRY_SHARDS, FERRY_CUDA, FERRY_TORCH); tests/package/recipes/ reads the cache variables
generate() sets and builds ferry with exactly those, so every FERRY_* name here must exist."""

import os
import re

from conan import ConanFile
from conan.errors import ConanInvalidConfiguration
from conan.tools.build import check_min_cppstd
from conan.tools.cmake import CMake, CMakeDeps, CMakeToolchain, cmake_layout
from conan.tools.files import copy, load, rmdir
from conan.tools.gnu import PkgConfigDeps

required_conan_version = ">=2.0"


class FerryConan(ConanFile):
    name = "ferry"
    description = "C++20 data loading for ML training: bounded pipelines on oneTBB, image, video and HTTP ops, host-to-GPU transfer"
    license = "Apache-2.0"
    topics = ("machine-learning", "data-loading", "pipeline", "tbb", "image", "video")
    package_type = "library"
    settings = "os", "arch", "compiler", "build_type"
    options = {
        "shared": [True, False],
        "fPIC": [True, False],
        "image": [True, False],
        "video": [True, False],
        "http": [True, False],
        "shards": [True, False],
        "cuda": [True, False],
        "torch": [True, False],
    }
    # CUDA and torch are off by default: neither the CUDA Toolkit nor libtorch is a Conan package
    # (ConanCenter has no libtorch recipe), so each has to be on the machine.
    default_options = {
        "shared": False,
        "fPIC": True,
        "image": True,
        "video": True,
        "http": True,
        "shards": True,
        "cuda": False,
        "torch": False,
    }
    exports_sources = ("CMakeLists.txt", "LICENSE", "cmake/*", "include/*", "engine/*", "ops/*")
    test_package_folder = "tests/package/conan"

    def set_version(self):
        # One version, the one in project(): a release bumps CMakeLists.txt only.
        cmakelists = load(self, os.path.join(self.recipe_folder, "CMakeLists.txt"))
        self.version = re.search(r"project\(ferry\s+VERSION\s+([0-9.]+)", cmakelists).group(1)

    def config_options(self):
        if self.settings.os == "Windows":
            del self.options.fPIC

    def configure(self):
        if self.options.shared:
            self.options.rm_safe("fPIC")

    def layout(self):
        cmake_layout(self)

    def requirements(self):
        # dlpack.h is used inside libferry_core only; no public header includes it.
        self.requires("dlpack/[>=0.8 <2]", visible=False)
        self.requires("onetbb/[>=2021.5 <2023]")
        if self.options.image:
            self.requires("libjpeg-turbo/[>=2.1 <4]")
            self.requires("libpng/[>=1.6 <2]")
            self.requires("libwebp/[>=1.2 <2]")
            self.requires("opencv/[>=4.5 <5]")
        if self.options.video:
            self.requires("ffmpeg/[>=5.1 <8]")
        if self.options.http:
            self.requires("libcurl/[>=7.78 <9]")
            self.requires("expat/[>=2.4 <3]")
            self.requires("openssl/[>=1.1.1 <4]")
        if self.options.shards:
            self.requires("libarchive/[>=3.6 <4]")

    def validate(self):
        check_min_cppstd(self, 20)
        if self.settings.os != "Linux":
            raise ConanInvalidConfiguration(
                f"{self.ref} is built and tested on Linux only (GCC 12 or newer)")

    def generate(self):
        tc = CMakeToolchain(self)
        # Cache variables (not toolchain variables), so that CMake names any that ferry does
        # not use in "Manually-specified variables were not used by the project".
        tc.cache_variables["FERRY_IMAGE"] = bool(self.options.image)
        tc.cache_variables["FERRY_VIDEO"] = bool(self.options.video)
        # HTTP and CUDA default to AUTO in CMake; a package says ON or OFF, never "if found".
        tc.cache_variables["FERRY_HTTP"] = "ON" if self.options.http else "OFF"
        tc.cache_variables["FERRY_SHARDS"] = "ON" if self.options.shards else "OFF"
        tc.cache_variables["FERRY_CUDA"] = "ON" if self.options.cuda else "OFF"
        # libtorch from the machine, not from Conan: its TorchConfig.cmake where CMake looks
        # (Debian's libtorch-dev), or Torch_DIR=<libtorch>/share/cmake/Torch in the environment
        # or a profile's [conf] tools.cmake.cmaketoolchain:extra_variables.
        tc.cache_variables["FERRY_TORCH"] = "ON" if self.options.torch else "OFF"
        # ferry::mpi has no option yet: never built, whatever MPI the build machine has.
        tc.cache_variables["FERRY_MPI"] = "OFF"
        # The Python package (python/) is not part of the C++ package.
        tc.cache_variables["FERRY_PYTHON"] = "OFF"
        tc.cache_variables["FERRY_BUILD_TESTS"] = False
        tc.cache_variables["FERRY_BUILD_EXAMPLES"] = False
        tc.cache_variables["FERRY_BUILD_PERF"] = False
        tc.generate()
        deps = CMakeDeps(self)
        # ferry's build looks for libjpeg-turbo::jpeg; libjpeg-turbo's recipe names its static
        # library ::jpeg-static.
        deps.set_property("libjpeg-turbo::jpeg", "cmake_target_name", "libjpeg-turbo::jpeg")
        deps.generate()
        # FFmpeg is found through pkg-config (cmake/ferry-video-deps.cmake); CMakeToolchain
        # puts the generators folder, where these .pc files go, on PKG_CONFIG_PATH.
        PkgConfigDeps(self).generate()

    def build(self):
        cmake = CMake(self)
        cmake.configure()
        cmake.build()

    def package(self):
        copy(self, "LICENSE", self.source_folder, os.path.join(self.package_folder, "licenses"))
        cmake = CMake(self)
        cmake.install()
        # Consumers get CMakeDeps' and PkgConfigDeps' files, generated from package_info().
        rmdir(self, os.path.join(self.package_folder, "lib", "cmake"))
        rmdir(self, os.path.join(self.package_folder, "lib", "pkgconfig"))

    def package_info(self):
        # The same file and target names as ferry's own ferryConfig.cmake.
        self.cpp_info.set_property("cmake_file_name", "ferry")
        self.cpp_info.set_property("cmake_target_name", "ferry::ferry")

        core = self.cpp_info.components["core"]
        core.set_property("cmake_target_name", "ferry::core")
        core.libs = ["ferry_core"]

        engine = self.cpp_info.components["engine"]
        engine.set_property("cmake_target_name", "ferry::ferry")
        engine.libs = ["ferry"]
        engine.requires = ["core", "onetbb::libtbb"]
        if self.settings.os in ("Linux", "FreeBSD"):
            engine.system_libs = ["pthread"]

        if self.options.image:
            image = self.cpp_info.components["image"]
            image.set_property("cmake_target_name", "ferry::image")
            image.libs = ["ferry_image"]
            image.requires = ["core", "libjpeg-turbo::jpeg", "libpng::libpng", "libwebp::webp",
                              "opencv::opencv_imgproc"]
        if self.options.video:
            video = self.cpp_info.components["video"]
            video.set_property("cmake_target_name", "ferry::video")
            video.libs = ["ferry_video"]
            video.requires = ["core", "ffmpeg::avformat", "ffmpeg::avcodec", "ffmpeg::swscale",
                              "ffmpeg::swresample", "ffmpeg::avutil"]
        if self.options.http:
            http = self.cpp_info.components["http"]
            http.set_property("cmake_target_name", "ferry::http")
            http.libs = ["ferry_http"]
            http.requires = ["core", "libcurl::curl", "expat::expat", "openssl::crypto"]
        if self.options.shards:
            shards = self.cpp_info.components["shards"]
            shards.set_property("cmake_target_name", "ferry::shards")
            shards.libs = ["ferry_shards"]
            shards.requires = ["core", "libarchive::libarchive"]

        # Always built: without CUDA a stub whose to_cuda() fails at build(). With cuda=True a
        # static libferry_cuda.a needs the CUDA runtime, which the consumer links itself
        # (find_package(CUDAToolkit), CUDA::cudart): no Conan package provides it.
        cuda = self.cpp_info.components["cuda"]
        cuda.set_property("cmake_target_name", "ferry::cuda")
        cuda.libs = ["ferry_cuda"]
        cuda.requires = ["core"]

        # libtorch is no Conan package: the consumer finds it (find_package(Torch), Debian's
        # libtorch-dev or Torch_DIR) and links `torch` beside ferry::torch, whose header
        # includes libtorch's. A static libferry_torch.a also needs libferry_cuda.
        if self.options.torch:
            torch = self.cpp_info.components["torch"]
            torch.set_property("cmake_target_name", "ferry::torch")
            torch.libs = ["ferry_torch"]
            torch.requires = ["core", "cuda"]
