{
  "targets": [
    {
      "target_name": "nfnl",
      "sources": [
        "native/addon.cc",
        "native/errors.cc",
        "native/netns.cc",
        "native/sandbox.cc",
        "native/socket.cc",
        "native/listener.cc",
        "native/netlink_io.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-fvisibility=hidden", "-fstack-protector-strong"],
      "conditions": [
        ["OS!='linux'", { "sources=": [] }]
      ]
    },
    {
      "target_name": "nfkube-cni-ipam",
      "type": "executable",
      "sources": ["native/cni/plugin.c", "native/cni/json.c"],
      "cflags": ["-std=c11", "-Wall", "-Wextra", "-fstack-protector-strong", "-D_FORTIFY_SOURCE=2"],
      "ldflags": ["<!@(node native/cni/ldflags.js)"],
      "conditions": [
        ["OS!='linux'", { "type": "none", "sources=": [] }]
      ]
    }
  ]
}
