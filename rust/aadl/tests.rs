//! The serialiser's rules (lxml's), and a small PE rendered whole.

use rustc_hash::FxHashMap;

use super::xml::{push_int, Writer};
use super::*;

#[test]
fn attributes_escape_markup_quotes_and_whitespace_as_libxml2_does() {
    let mut w = Writer::default();
    w.start("a").attr("k", "a&<>\"'\t\n\r é ]]>").unwrap().end();
    assert_eq!(
        w.finish(),
        "<a k=\"a&amp;&lt;&gt;&quot;'&#9;&#10;&#13; é ]]&gt;\"/>"
    );
}

#[test]
fn text_escapes_markup_and_carriage_returns_only() {
    let mut w = Writer::default();
    w.text_element("a", "a&<>\"'\t\n\r é").unwrap();
    assert_eq!(w.finish(), "<a>a&amp;&lt;&gt;\"'\t\n&#13; é</a>");
}

#[test]
fn empty_elements_close_themselves_unless_their_text_was_set() {
    let mut w = Writer::default();
    w.start("r")
        .start("a")
        .end()
        .text_element("b", "")
        .unwrap()
        .int_element("c", -12);
    w.end();
    assert_eq!(w.finish(), "<r><a/><b></b><c>-12</c></r>");
}

#[test]
fn strings_xml_cannot_hold_are_refused() {
    for bad in [
        "\u{0}",
        "a\u{1}",
        "\u{b}",
        "\u{1f}",
        "x\u{fffe}",
        "\u{ffff}",
    ] {
        let mut w = Writer::default();
        let error = w.start("a").attr("k", bad).err();
        assert_eq!(
            error,
            Some(AadlError::NotXml { value: bad.into() }),
            "{bad:?}"
        );
        assert!(Writer::default().text_element("a", bad).is_err(), "{bad:?}");
    }
    for fine in [
        "\u{7f}",
        "\u{85}",
        "\u{fdd0}",
        "\u{effe}",
        "\u{ef}",
        "\u{10ffff}",
        "\u{fffd}",
    ] {
        assert!(
            Writer::default().start("a").attr("k", fine).is_ok(),
            "{fine:?}"
        );
    }
}

#[test]
fn integers_print_as_python_does() {
    for (n, want) in [
        (0, "0"),
        (7, "7"),
        (-1, "-1"),
        (i64::MAX, "9223372036854775807"),
        (i64::MIN, "-9223372036854775808"),
    ] {
        let mut out = String::new();
        push_int(&mut out, n);
        assert_eq!(out, want);
    }
}

#[test]
fn floats_print_as_python_repr() {
    let cases = [
        (1.0, "1.0"),
        (0.5, "0.5"),
        (-2.5, "-2.5"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1e16, "1e+16"),
        (1.5e16, "1.5e+16"),
        (1e15, "1000000000000000.0"),
        (123456789012345.6, "123456789012345.6"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.25e-7, "1.25e-07"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
        (f64::NAN, "nan"),
        (0.1 + 0.2, "0.30000000000000004"),
        // 2**49 + 0.25: "...312.2" and "...312.3" both read back; Python takes the rounded one
        (562949953421312.2, "562949953421312.2"),
    ];
    for (value, want) in cases {
        assert_eq!(python_float_repr(value), want, "{value:e}");
    }
}

fn operator(index: i64, name: &str) -> Operator {
    Operator {
        index,
        name: name.into(),
        wrapper: "none".into(),
        input_ports: vec![InputPort {
            index: 0,
            name: "In".into(),
            encoding: "LE".into(),
            transport: "TCP".into(),
            ..InputPort::default()
        }],
        output_ports: vec![OutputPort {
            index: 0,
            name: name.into(),
            stream_name: name.into(),
            encoding: "LE".into(),
            transport: "TCP".into(),
            viewable: true,
            ..OutputPort::default()
        }],
        ..Operator::default()
    }
}

#[test]
fn a_pe_with_an_inter_pe_input_renders_whole() {
    let job = Job {
        name: "j&".into(),
        id: 3,
        app: App {
            name: "A".into(),
            avoid_runtime_yield: "auto".into(),
            ..App::default()
        },
        ..Job::default()
    };
    let edge = Edge {
        src: 1,
        src_port: 0,
        dst: 2,
        dst_port: 0,
        splitter: None,
    };
    let ports = PortIndex {
        pe_of: FxHashMap::from_iter([(1, 0), (2, 1)]),
        inputs: FxHashMap::from_iter([((2, 0), (1, 0))]),
        outputs: FxHashMap::from_iter([((1, 0, None), (0, 0))]),
    };
    let pe = Pe {
        id: 1,
        index: 1,
        members: vec![Member {
            node: Node {
                index: 2,
                name: "B".into(),
                operator: operator(2, "B"),
                ..Node::default()
            },
            into: vec![&edge],
            from: vec![],
        }],
        inputs: vec![PeInput {
            id: 0,
            node: 2,
            port: 0,
            senders: vec![(0, edge.clone())],
        }],
        outputs: vec![],
    };
    let rendered = render(&job, &ports, &[pe]).unwrap();
    let doc = &rendered[0];
    assert!(doc.starts_with(
        "<augmentedPE xmlns=\"http://www.ibm.com/xmlns/prod/streams/application/augmented\""
    ));
    assert!(doc.contains(" id=\"1\" jobId=\"3\" jobName=\"j&amp;\" user=\"user\""));
    assert!(doc.contains(
        "<a:inputPort index=\"0\" name=\"In\" isMutable=\"false\" tupleTypeIndex=\"0\">\
         <a:interPeConnection operInstanceIndex=\"1\" oportIndex=\"0\" pePortIndex=\"0\"/></a:inputPort>"
    ));
    assert!(doc.contains(
        "<inputPorts><inputPort id=\"0\" index=\"0\" peId=\"1\" encoding=\"LE\" transport=\"TCP\">\
         <tupleType index=\"0\"><a:attribute name=\"_\" type=\"void\"/></tupleType><staticConnections>\
         <staticConnection peId=\"0\" oportId=\"0\" oportIndex=\"0\"/></staticConnections>\
         <operInstanceConnection operInstanceIndex=\"2\" iportIndex=\"0\"/></inputPort></inputPorts>"
    ));
    assert!(doc.ends_with("<toolkitsMap/></augmentedPE>"));
}

#[test]
fn a_connection_to_a_port_no_pe_owns_is_an_inconsistent_plan() {
    let edge = Edge {
        src: 1,
        dst: 2,
        ..Edge::default()
    };
    let pe = Pe {
        id: 1,
        members: vec![Member {
            node: Node {
                index: 2,
                operator: operator(2, "B"),
                ..Node::default()
            },
            into: vec![&edge],
            from: vec![],
        }],
        ..Pe::default()
    };
    let ports = PortIndex {
        pe_of: FxHashMap::from_iter([(1, 0), (2, 1)]),
        ..PortIndex::default()
    };
    let error = render(&Job::default(), &ports, &[pe]).unwrap_err();
    assert!(matches!(error, AadlError::Inconsistent { .. }), "{error}");
}
